"""timerepro: regenerate the tables and figures of five papers on how models encode time."""

__version__ = "0.1.0"
