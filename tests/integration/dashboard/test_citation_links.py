"""The analysis's citations as the session page renders them: links, invalid marks, nothing unescaped."""

from __future__ import annotations

from agents.citations import Evidence, verify_citations
from tarsy.dashboard.citations import citations_view, link_citations
from tarsy.dashboard.markdown import render_markdown

EVIDENCE = [Evidence(id="E1", event_id=41, tool="k8s.pods_list"), Evidence(id="E2", event_id=42, tool="k8s.logs")]
ALERT = '{"namespace": "shop"}'


def _page(analysis: str) -> str:
    view = citations_view(verify_citations(analysis, EVIDENCE, ALERT))
    return str(link_citations(render_markdown(analysis), view))


def test_valid_ids_link_to_their_event_and_invalid_ones_are_marked_with_the_reason():
    html = _page("**web** crashes [E2, E1] in [A:namespace]; disk full [E7].")
    assert ('<a class="cite" href="#event-42" data-cite-event="42" title="Evidence E2: result of k8s.logs">E2</a>'
            in html)
    assert 'href="#event-41"' in html
    assert '<a class="cite cite-alert" href="#alert-data" title="Field of the alert">A:namespace</a>' in html
    assert ('<span class="cite cite-invalid" title="Invalid citation: not a tool result of this session">E7</span>'
            in html)
    assert "<strong>web</strong>" in html


def test_markup_in_an_analysis_stays_inert_and_unverified_text_is_left_alone():
    html = _page('<img src=x onerror="alert(1)"> [A:<script>x</script>] [E1]')
    assert "<img" not in html and "<script" not in html and 'href="#event-41"' in html
    assert "[A:&lt;script&gt;x&lt;/script&gt;]" in html  # markup is no field path: plain (escaped) text
    assert str(link_citations(render_markdown("see [E1]"), None)) == str(render_markdown("see [E1]"))
