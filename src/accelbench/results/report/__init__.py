"""`accelbench report`: saved runs in, one self-contained HTML page and a Markdown summary out.

Reads pytest-benchmark JSON only and never imports TensorFlow: runs.py loads and checks the
files, plots.py draws with matplotlib, page.py and markdown.py write, cli.py is the command.
"""
