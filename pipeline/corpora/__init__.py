"""Corpora and labelled sets: the embedded partition, local files, the Hub, LibreOffice's help."""
