"""Reference solutions of the notebooks' exercises, one module per notebook (``nb01`` ... ``nb06``).

The test suite runs each notebook with ``solve_exercises=True``, which feeds these solutions to the
self-check cells, so a solution that no longer passes its own check fails CI.
"""
