"""Markdown → sanitized HTML for LLM text, alert data and tool output shown on dashboard pages.

LLM and tool text is untrusted: raw HTML in it is escaped (not interpreted), and
only a small set of formatting tags and safe link protocols survive.
"""

from __future__ import annotations

import json
import threading

import bleach
import markdown as md
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "pre", "code", "blockquote", "strong", "em", "b", "i", "del", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "a", "span",
})
ALLOWED_ATTRIBUTES = {"a": ["href", "title"], "code": ["class"], "th": ["align"], "td": ["align"]}
ALLOWED_PROTOCOLS = frozenset({"http", "https", "mailto"})
MARKDOWN_EXTENSIONS = ["fenced_code", "tables", "sane_lists", "nl2br"]
MAX_MARKDOWN_CHARS = 200_000  # beyond this, plain escaped text: Markdown on megabytes would stall a page render


def _link_attributes(attrs, new=False):
    attrs[(None, "rel")] = "noopener noreferrer nofollow"
    attrs[(None, "target")] = "_blank"
    return attrs


_local = threading.local()  # a bleach Cleaner keeps parser state: one per thread, never shared


def _cleaner() -> bleach.sanitizer.Cleaner:
    cleaner = getattr(_local, "cleaner", None)
    if cleaner is None:
        cleaner = _local.cleaner = bleach.sanitizer.Cleaner(
            tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, protocols=ALLOWED_PROTOCOLS, strip=False,
            filters=[lambda source: bleach.linkifier.LinkifyFilter(source, callbacks=[_link_attributes],
                                                                   parse_email=False)],
        )
    return cleaner


def render_markdown(text: str | None) -> SafeString:
    """Sanitized HTML for untrusted Markdown; tags outside the allow-list come out as visible, inert text."""
    if not text:
        return mark_safe("")
    if len(text) > MAX_MARKDOWN_CHARS:
        return mark_safe(f'<pre class="plain">{escape(text)}</pre>')
    html = md.markdown(text, extensions=MARKDOWN_EXTENSIONS, output_format="html")
    return mark_safe(_cleaner().clean(html))


def pretty_data(value) -> str:
    """JSON values and JSON text as indented JSON; any other text (YAML, logs) unchanged. Plain text, not HTML."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    if value is None:
        return ""
    text = str(value)
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and len(stripped) < MAX_MARKDOWN_CHARS:
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text
