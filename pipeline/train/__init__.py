"""Training: data prepared once, the file-backed run, torchrun, the command line, the probe, the ablations."""
