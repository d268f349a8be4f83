"""Datasets of the five papers: lock, download, extraction, preprocessing, stand-ins, statistics.

Entry points: `prepare.prepare(name, standin=...)`, `ctdg.load_processed`, `ctdg.link_prediction_split`,
`tpp.load_processed`, `series.load_processed`, `stats.*`; command line: `timerepro data ...`.
"""
