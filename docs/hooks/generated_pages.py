"""MkDocs hook: pages made from what the repository already holds, so the docs cannot drift.

- The options page's table is generated from the plugin's own option table
  (accelbench.plugin.options.add_options), the one `pytest --help` prints.
- The home page is the README, its links to `docs/...` made relative to the site.

The page holds the marker `<!-- options-table -->`; this hook replaces it. It reads the option
table by handing add_options a recorder in place of pytest's parser, so building the docs
needs pytest and numpy (what the option module imports) but neither TensorFlow nor an install.
"""

from __future__ import annotations

import sys
from pathlib import Path

MARKER = "<!-- options-table -->"
README_MARKER = "<!-- readme -->"
README = Path(__file__).resolve().parents[2] / "README.md"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
# Imported now: MkDocs restores sys.path once its hooks are loaded.
from accelbench.plugin.options import add_options  # noqa: E402


class _Recorder:
    """Stands in for pytest's Parser and its option group: keeps what add_options declares."""

    def __init__(self) -> None:
        self.flags: list[tuple[str, str, str]] = []  # (flag, metavar, help)
        self.ini: dict[str, str] = {}  # help text -> ini key

    def getgroup(self, *args: object, **kwargs: object) -> _Recorder:
        return self

    def addoption(self, flag: str, **kwargs: object) -> None:
        self.flags.append((flag, str(kwargs.get("metavar") or ""), str(kwargs.get("help", ""))))

    def addini(self, name: str, help: str, **kwargs: object) -> None:
        self.ini.setdefault(help, name)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def options_table() -> str:
    recorder = _Recorder()
    add_options(recorder)
    rows = ["| option | ini key | what it does |", "| --- | --- | --- |"]
    for flag, metavar, help_text in recorder.flags:
        ini = recorder.ini.get(help_text) or next((key for text, key in recorder.ini.items()
                                                   if text.startswith("Like " + flag)), "")
        shown = f"`{flag} {metavar}`" if metavar else f"`{flag}`"
        rows.append(f"| {shown} | {f'`{ini}`' if ini else ''} | {_cell(help_text)} |")
    return "\n".join(rows)


def readme() -> str:
    return README.read_text().replace("](docs/", "](")


def on_page_markdown(markdown: str, page: object, **kwargs: object) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, options_table())
    if README_MARKER in markdown:
        markdown = markdown.replace(README_MARKER, readme())
    return markdown
