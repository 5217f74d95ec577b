"""Static vectors: files and downloads, fastText trained here, spaCy's pretrained tables, alignment on disk."""
