"""Running the notebooks: the job's options, its steps, papermill, the renders."""
