"""The documentation: the MkDocs site builds strictly, and README.md's relative links resolve.

``make docs`` runs ``mkdocs build --strict`` with the link and anchor validation of
``mkdocs.yml``; here the same build runs into a temporary directory, so a broken link or
anchor between the pages fails ``make test``.  A tiny project with a broken link is built with
the same validation settings as the negative control: it must fail, or the check proves nothing.

README.md is not part of the site (GitHub renders it), so its links are checked here: every
relative link or image must name an existing file, and an ``#anchor`` into a Markdown file must
name one of its headings as GitHub slugs them.  The one exception is the web console's
screenshot, which is produced separately.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML (mkdocs needs it) ships no stubs

from mafka.cli.kafka_scripts import SCRIPTS
from mafka.cli.main import COMMAND_MODULES, command_name

ROOT = Path(__file__).resolve().parents[2]
# The venv's mkdocs beside its python (not resolved: .venv/bin/python is a symlink out of the venv).
MKDOCS = Path(sys.executable).with_name("mkdocs")
#: Produced separately (a screenshot of the running console); README names it before it exists.
PENDING_IMAGES = {"docs/images/console-group.png"}

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(`+).*?\1")


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    assert MKDOCS.exists(), f"{MKDOCS} is missing: mkdocs is in setup.cfg's test extras (make test installs it)"
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=config.parent, capture_output=True, text=True, timeout=300,
    )


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(_CODE_SPAN.sub("", line))
    return lines


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def heading_slugs(text: str) -> set[str]:
    """The anchors of a Markdown text's headings, with GitHub's -1, -2 … for repeats."""
    slugs: set[str] = set()
    for line in _prose_lines(text):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = base = github_slug(match.group(1))
            n = 0
            while slug in slugs:
                n += 1
                slug = f"{base}-{n}"
            slugs.add(slug)
    return slugs


def relative_links(text: str) -> list[str]:
    """Every link and image target in Markdown prose that is not a URL."""
    targets = []
    for line in _prose_lines(text):
        for target in _LINK.findall(line):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto: …
                targets.append(target)
    return targets


def broken_links(markdown: Path, root: Path) -> list[str]:
    """Each relative link of ``markdown`` that names a missing file or heading, with the reason."""
    problems = []
    for target in relative_links(markdown.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        if path_part in PENDING_IMAGES:
            continue
        path = (markdown.parent / path_part).resolve() if path_part else markdown
        if not path.exists():
            problems.append(f"{target}: no such file {path.relative_to(root) if path.is_relative_to(root) else path}")
        elif anchor and path.suffix == ".md" and anchor not in heading_slugs(path.read_text(encoding="utf-8")):
            problems.append(f"{target}: {path.name} has no heading with the anchor #{anchor}")
    return problems


# ----------------------------------------------------------------------------- the site


def test_the_site_builds_strictly_with_every_page(tmp_path: Path) -> None:
    result = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}{result.stderr}"
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = [next(iter(entry.values())) for entry in config["nav"]]
    assert len(pages) >= 18
    for page in pages:
        built = tmp_path / "site" / ("index.html" if page == "index.md" else f"{page[:-3]}/index.html")
        assert built.is_file(), f"{page} was not built"


@pytest.mark.parametrize(("link", "complaint"), [
    ("[missing page](missing.md)", "'missing.md', but the target is not found"),
    ("[missing anchor](other.md#no-such-heading)", "does not contain an anchor '#no-such-heading'"),
    ("[missing image](images/none.png)", "'images/none.png', but the target is not found"),
])
def test_the_strict_build_fails_on_a_broken_link(tmp_path: Path, link: str, complaint: str) -> None:
    """The negative control: the repository's own validation settings, a tiny site, one broken link."""
    validation = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["validation"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A heading\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(yaml.safe_dump({
        "site_name": "control", "theme": {"name": "readthedocs"}, "validation": validation,
        "nav": [{"Home": "index.md"}, {"Other": "other.md"}],
    }))

    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[fine](other.md#a-heading)\n")
    good = _mkdocs_build(config, tmp_path / "site")
    assert good.returncode == 0, f"the control site should build:\n{good.stderr}"

    (tmp_path / "docs" / "index.md").write_text(f"# Home\n\n[fine](other.md#a-heading) {link}\n")
    bad = _mkdocs_build(config, tmp_path / "site")
    assert bad.returncode != 0, f"a strict build with {link} succeeded:\n{bad.stderr}"
    assert complaint in bad.stderr


# ----------------------------------------------------------------------------- README.md


def test_every_relative_link_in_the_readme_resolves() -> None:
    readme = ROOT / "README.md"
    targets = relative_links(readme.read_text(encoding="utf-8"))
    assert sum(t.startswith("docs/") for t in targets) >= 18, targets  # the page list at least
    assert broken_links(readme, ROOT) == []


def test_the_readme_link_check_catches_missing_files_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Exactly once: transactions\n\n```\n## not a heading\n```\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Title\n\n## Local heading\n\n"
        "[ok](docs/page.md#exactly-once-transactions) [ok](#local-heading) [web](https://example.com/x.md)\n"
        "![later](docs/images/console-group.png) `[code](missing-in-code.md)`\n\n"
        "```\n[fenced](missing-in-fence.md)\n```\n\n"
        "[gone](docs/gone.md) [bad anchor](docs/page.md#not-a-heading) [fenced anchor](docs/page.md#not-a-heading-1)\n"
        "[bad local](#nowhere) ![gone image](docs/images/other.png)\n"
    )
    assert broken_links(readme, tmp_path) == [
        "docs/gone.md: no such file docs/gone.md",
        "docs/page.md#not-a-heading: page.md has no heading with the anchor #not-a-heading",
        "docs/page.md#not-a-heading-1: page.md has no heading with the anchor #not-a-heading-1",
        "#nowhere: README.md has no heading with the anchor #nowhere",
        "docs/images/other.png: no such file docs/images/other.png",
    ]


def test_github_slugs() -> None:
    assert github_slug("Conformance: librdkafka's test suite") == "conformance-librdkafkas-test-suite"
    assert github_slug("Exactly once & transactions") == "exactly-once--transactions"
    assert github_slug("The local cluster: `make run`") == "the-local-cluster-make-run"
    assert heading_slugs("# A\n## A\n") == {"a", "a-1"}


# ----------------------------------------------------------------------------- the tool list


def test_every_tool_is_listed_in_the_readme_and_on_the_tools_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tools = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    commands = ["selfcheck", *(command_name(module) for module in COMMAND_MODULES)]
    for text, where in ((readme, "README.md"), (tools, "docs/tools.md")):
        missing = [c for c in commands if not re.search(rf"`mafka {re.escape(c)}[` ]", text)]
        assert missing == [], f"{where} does not list: {missing}"
    missing_scripts = [script for script in SCRIPTS if f"`{script}`" not in tools]
    assert missing_scripts == [], f"docs/tools.md does not name: {missing_scripts}"


def _metric_rows(text: str) -> list[str]:
    """The rows of the metric table: those naming a Prometheus series first."""
    return [line for line in text.splitlines() if re.match(r"^\| `(kafka|mafka)_", line)]


def test_the_readme_and_the_metrics_page_list_the_same_metrics() -> None:
    """The metric table lives in both places (the issue wants it in the README); they must not drift."""
    readme = _metric_rows((ROOT / "README.md").read_text())
    page = _metric_rows((ROOT / "docs" / "metrics.md").read_text())
    assert len(readme) >= 20
    assert readme == page


def _expand(token: str) -> list[str]:
    """``a_{b,c}_d`` → ``a_b_d``, ``a_c_d`` (every brace group)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", token)
    if match is None:
        return [re.sub(r"\{[^{}]*\}", "", token)]  # a {label} list, not alternatives
    head, tail = token[:match.start()], token[match.end():]
    return [name for part in match.group(1).split(",") for name in _expand(head + part + tail)]


def table_names(text: str) -> set[str]:
    """Every series name the metric table spells out: braces expanded; ``…_x`` after a name N
    stands for ``N_x`` or for N with its last parts replaced by ``_x``."""
    names: set[str] = set()
    for row in _metric_rows(text):
        previous: list[str] = []
        for token in re.findall(r"`([^`]+)`", row.split(" | ")[0]):
            if token.startswith("…"):
                rest = token[1:]
                expanded = []
                for before in previous:
                    expanded.append(before + rest)
                    parts = before.split("_")
                    for cut in range(1, len(parts)):
                        expanded.append("_".join(parts[:-cut]) + rest)
                for name in expanded:
                    names.update(_expand(name))
                continue
            previous = _expand(token)
            names.update(previous)
    return names


def test_every_metric_the_broker_writes_is_in_the_table() -> None:
    """Each family name in mafka/broker/metrics_families.py is spelled out by the README's table."""
    source = (ROOT / "mafka" / "broker" / "metrics_families.py").read_text()
    names = table_names((ROOT / "README.md").read_text())
    written = {name for name in re.findall(r'"((?:kafka|mafka)_[a-z_]+)"', source)
               if not name.endswith("_")}  # a prefix the code completes
    assert len(written) >= 30
    missing = [name for name in sorted(written) if name not in names and name + "_total" not in names]
    assert missing == []
    # negative control: a name the table does not have is caught
    assert "kafka_server_brokertopicmetrics_made_up_total" not in names
