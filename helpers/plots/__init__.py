"""Plotting, kept apart from the algorithms: one module per notebook topic.

These functions draw what the teaching modules compute; nothing here changes a number.
"""
