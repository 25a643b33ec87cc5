"""MkDocs hook: pages made from what the repository already holds, so the docs cannot drift.

- The options page's table is made from the plugin's own option table
  (accelbench.plugin.options.add_options), the one `pytest --help` prints; the results page's
  list of the terminal summary's tables from the registered kinds (accelbench.benches.catalog.sections()). Each is
  committed between `<!-- NAME -->` and `<!-- /NAME -->`, so the page reads whole on the
  repository too; a stale copy stops the site's build (and tests/test_registry_and_options.py).
  `python docs/hooks/generated_pages.py` rewrites them.
- The home page is the README, its links to `docs/...` made relative to the site.

It reads the option table by handing add_options a recorder in place of pytest's parser, so
building the docs needs pytest, numpy and scipy (what those modules import) but neither
TensorFlow nor an install.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
OPTIONS_PAGE = DOCS / "options.md"
README_MARKER = "<!-- readme -->"
README = Path(__file__).resolve().parents[2] / "README.md"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
# Imported now: MkDocs restores sys.path once its hooks are loaded.
from accelbench.benches.catalog import sections  # noqa: E402
from accelbench.plugin.options import add_options  # noqa: E402


class _Recorder:
    """Stands in for pytest's Parser and its option group: keeps what add_options declares."""

    def __init__(self) -> None:
        self.flags: list[tuple[str, str, str]] = []  # (flag, metavar, help)
        self.ini: dict[str, str] = {}  # help text -> ini key

    def getgroup(self, *args: object, **kwargs: object) -> _Recorder:
        return self

    def addoption(self, flag: str, **kwargs: object) -> None:
        # addoption's help is argparse's, where a literal % is written %%
        self.flags.append((flag, str(kwargs.get("metavar") or ""), str(kwargs.get("help", "")).replace("%%", "%")))

    def addini(self, name: str, help: str, **kwargs: object) -> None:
        self.ini.setdefault(help, name)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def options_table() -> str:
    recorder = _Recorder()
    add_options(recorder)
    rows = ["| option | ini key | what it does |", "| --- | --- | --- |"]
    for flag, metavar, help_text in recorder.flags:
        ini = recorder.ini.get(help_text) or next(
            (key for text, key in recorder.ini.items() if text.startswith("Like " + flag)), ""
        )
        shown = f"`{flag} {metavar}`" if metavar else f"`{flag}`"
        rows.append(f"| {shown} | {f'`{ini}`' if ini else ''} | {_cell(help_text)} |")
    return "\n".join(rows)


def summary_sections() -> str:
    """The terminal summary's tables: each one's title and the extra_info key it shows."""
    rows = [
        "| table in the terminal summary and the report | from `extra_info` key | of cells |",
        "| --- | --- | --- |",
    ]
    for section in sections():
        rows.append(f"| {_cell(section.title)} | `{section.metric}` | {', '.join(sorted(section.benchmarks))} |")
    return "\n".join(rows)


# name -> (page, what it holds between <!-- name --> and <!-- /name -->)
GENERATED = {
    "options-table": (OPTIONS_PAGE, options_table),
    "summary-sections": (DOCS / "results.md", summary_sections),
}


def readme() -> str:
    return README.read_text().replace("](docs/", "](")


def committed_table(markdown: str, name: str = "options-table") -> str:
    """The table the page holds between its two markers."""
    return markdown.split(f"<!-- {name} -->", 1)[1].split(f"<!-- /{name} -->", 1)[0].strip()


def with_table(markdown: str, name: str) -> str:
    marker, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    head, rest = markdown.split(marker, 1)
    return f"{head}{marker}\n{GENERATED[name][1]()}\n{end}{rest.split(end, 1)[1]}"


def on_page_markdown(markdown: str, page: object, **kwargs: object) -> str:
    for name, (path, made) in GENERATED.items():
        if f"<!-- {name} -->" in markdown and committed_table(markdown, name) != made():
            raise ValueError(
                f"docs/{path.name}: the generated table '{name}' is stale; rewrite it with "
                "python docs/hooks/generated_pages.py"
            )
    if README_MARKER in markdown:
        markdown = markdown.replace(README_MARKER, readme())
    return markdown


if __name__ == "__main__":
    for name, (path, _) in GENERATED.items():
        path.write_text(with_table(path.read_text(), name))
