"""The figures each notebook draws, kept apart from the taught algorithms: one module per notebook topic.

These functions draw what ``helpers`` computes; nothing here changes a number. Notebook 06's figures, which
read whole run folders, are ``evidence.figure_plots``.
"""
