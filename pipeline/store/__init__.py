"""The store: every folder and file a run writes, its identity, locks, stamps, records and checkpoints."""
