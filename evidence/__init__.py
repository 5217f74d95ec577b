"""The evidence: notebook 06's analysis of finished runs and their records.

It reads run folders and records (results), scores each evaluation position against the baselines that need no
context (position_scores), groups tokens (token_analysis), judges the paper's claims (claims_table), draws and writes
the figures and tables (figures, figure_plots) and the studies beside the main pair (series, ablations, other_text).
It imports helpers and pipeline; of pipeline, only the notebooks' entry module reaches it, and lazily.
"""
