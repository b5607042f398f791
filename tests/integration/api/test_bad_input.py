"""Bad input is a 4xx with a JSON body naming the problem (an HTML page that says so on the dashboard), never a 500:
NUL characters, lone surrogates, impossible dates, non-ASCII digits, repeated MCP servers, unknown /api/ paths."""

from __future__ import annotations

import json

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from tarsy.api.handler import JsonErrorsASGIHandler
from tarsy.models import AlertSession
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

NUL = "Contains a NUL character"
SURROGATE = "Contains a lone surrogate"


def post_raw(client, path: str, body: str, **extra):
    """A JSON body written by hand: the escapes (\\u0000, \\ud800) reach the server exactly as a client sent them."""
    return client.post(path, data=body.encode(), content_type="application/json", **extra)


def problem(response, status: int = 400) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    return response.json()


# ---- JSON bodies -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body, field, reason", [
    ('{"data": "pod web-1\\u0000 down"}', "data", NUL),
    ('{"data": {"pod": {"logs": ["ok", "bad\\u0000"]}}}', "data.pod.logs.1", NUL),
    ('{"data": {"po\\u0000d": "web-1"}}', "data.po\ufffdd", "Key contains a NUL character"),
    ('{"data": "pod web-1\\ud800 down"}', "data", SURROGATE),
    ('{"data": {"pods": ["\\udc00"]}}', "data.pods.0", SURROGATE),
    ('{"data": {"\\ud83d": 1}}', "data.\ufffd", "Key contains a lone surrogate"),
    ('{"data": "x", "alert_type": "kube\\ud800"}', "alert_type", SURROGATE),
], ids=["nul", "nul_nested", "nul_in_key", "surrogate", "surrogate_nested", "surrogate_key", "surrogate_type"])
def test_alert_with_unstorable_text_is_refused_naming_where(api, body, field, reason):
    body_json = problem(post_raw(api, "/api/v1/alerts", body))
    assert body_json["error"] == "validation_error"
    assert list(body_json["detail"]) == [field]
    assert body_json["detail"][field][0].startswith(reason)
    assert not AlertSession.all_objects.exists()


def test_a_valid_surrogate_pair_is_ordinary_text(api):
    response = post_raw(api, "/api/v1/alerts", '{"data": "pager \\ud83d\\udcdf web-1 down"}')
    assert response.status_code == 202, response.content
    assert AlertSession.objects.get().alert_data == "pager \U0001f4df web-1 down"


@pytest.mark.parametrize("content, reason", [('"why\\u0000"', NUL), ('"why\\ud800"', SURROGATE)],
                         ids=["nul", "surrogate"])
def test_chat_question_with_unstorable_text_is_refused(api, make_session, content, reason):
    session = make_session()
    body = problem(post_raw(api, f"/api/v1/sessions/{session.id}/chat/messages", f'{{"content": {content}}}'))
    assert body["detail"]["content"][0].startswith(reason)


def test_too_deeply_nested_body_is_a_parse_error(api):
    body = problem(post_raw(api, "/api/v1/alerts", '{"data": ' + "[" * 100_000 + "]" * 100_000 + "}"))
    assert body == {"error": "malformed request body", "detail": "JSON parse error - nested too deeply"}


# ---- query parameters ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("param", ["search", "alert_type", "chain_id", "author", "status", "ordering", "start_date",
                                   "end_date", "page", "page_size"])
def test_nul_in_any_list_parameter_is_refused_naming_it(api, param):
    body = problem(api.get(f"/api/v1/sessions?{param}=web%001"))
    assert body["detail"] == {param: ["Contains a NUL character (\\u0000), which text cannot hold."]}


@pytest.mark.parametrize("query", ["search=%ED%A0%80abc", "alert_type=k%ED%B0%80", "search=%FFabc"])
def test_lone_surrogate_or_broken_utf8_in_the_query_is_refused(api, query):
    body = problem(api.get(f"/api/v1/sessions?{query}"))
    (param,) = body["detail"]
    assert param == query.split("=")[0]
    assert body["detail"][param] == ["Not valid UTF-8 (for example an encoded surrogate)."]


def test_nul_in_a_parameter_name_is_refused(api):
    assert problem(api.get("/api/v1/sessions/active?a%00b=1"))["detail"] == {
        "a\ufffdb": ["Contains a NUL character (\\u0000), which text cannot hold."]}


@pytest.mark.parametrize("query, param", [("start_date=2024-02-30", "start_date"), ("end_date=garbage", "end_date"),
                                          ("start_date=2024-13-01T00:00", "start_date")])
def test_impossible_dates_in_api_filters_are_refused(api, query, param):
    assert list(problem(api.get(f"/api/v1/sessions?{query}"))["detail"]) == [param]


@pytest.mark.parametrize("query, param", [("page=%D9%A1%D9%A2", "page"), ("page_size=%D9%A1%D9%A2", "page_size"),
                                          ("page=%C2%B2", "page"), ("page_size=1_0", "page_size"),
                                          ("page=+1", "page"), ("page=" + "9" * 5000, "page")])
def test_non_ascii_or_odd_digits_in_numeric_parameters_are_refused(api, query, param):
    detail = problem(api.get(f"/api/v1/sessions?{query}"))["detail"]
    assert list(detail) == [param]
    assert detail[param][0].startswith("Must be a whole number in ASCII digits")


def test_undecodable_query_bytes_get_a_json_400_from_the_asgi_handler():
    async def call():
        app = ApplicationCommunicator(JsonErrorsASGIHandler(), {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": "/api/v1/sessions", "raw_path": b"/api/v1/sessions", "query_string": b"search=\xff\xfeabc",
            "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)})
        await app.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await app.receive_output(5)
        body = await app.receive_output(5)
        return start, body

    from asgiref.sync import async_to_sync

    start, body = async_to_sync(call)()
    assert start["status"] == 400
    assert {k.lower(): v for k, v in start["headers"]}[b"content-type"] == b"application/json"
    assert json.loads(body["body"]) == {"error": "bad_request", "detail": "The query string is not valid UTF-8."}


# ---- dashboard filters: the page renders and says what it ignored -----------------------------------------------


@pytest.mark.parametrize("query, note", [
    ("start_date=2024-02-30", "The start_date filter was ignored: Enter a valid date/time."),
    ("end_date=garbage", "The end_date filter was ignored: Enter a valid date/time."),
    ("end_date=2024-02-30T25:00", "The end_date filter was ignored: Enter a valid date/time."),
    ("start_date=2030-01-02&end_date=2030-01-01",
     "The end_date filter was ignored: end_date must not be before start_date"),
    ("search=ab", "The search filter was ignored: Ensure this value has at least 3 characters (it has 2)."),
    ("status=done", "The status filter was ignored: Select a valid choice. done is not one of the available choices."),
    ("ordering=password", "The ordering filter was ignored: Select a valid choice. password is not one of the "
                          "available choices."),
    ("search=" + "ab" * 30_000, "The search filter was ignored: Ensure this value has at most 200 characters (it has "
                                "60000)."),
    ("search=web%001", "The search filter contains characters that cannot be searched for; it was ignored."),
    ("alert_type=k%00", "The alert_type filter contains characters that cannot be searched for; it was ignored."),
    ("chain_id=k%00", "The chain_id filter contains characters that cannot be searched for; it was ignored."),
    ("author=a%00", "The author filter contains characters that cannot be searched for; it was ignored."),
    ("page=%D9%A1%D9%A2", "Page '١٢' is not a whole number; 1 was used."),
    ("page_size=%C2%B2", "Page size '²' is not a whole number; 25 was used."),
])
@pytest.mark.parametrize("fragment", ["", "&fragment=history"], ids=["page", "fragment"])
def test_dashboard_ignores_an_unusable_filter_and_says_so(api, make_session, query, note, fragment):
    make_session()
    response = Client(REMOTE_ADDR="127.0.0.1").get(f"/?{query}{fragment}")
    assert response.status_code == 200
    assert note.replace("'", "&#x27;") in response.content.decode()


@pytest.mark.parametrize("ids", ["%C2%B2", "%D9%A1%D9%A2", "1,2,x", "1,%00"])
def test_event_fragment_ids_must_be_ascii_digits(make_session, ids):
    session = make_session()
    body = problem(Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{session.id}/events?ids={ids}"))
    assert body == {"error": "bad_request", "detail": {"ids": ["Comma-separated event ids, in ASCII digits."]}}


# ---- MCP selection ---------------------------------------------------------------------------------------------


def test_a_server_listed_twice_is_one_selection(api):
    response = api.post("/api/v1/alerts", {"data": "x", "mcp": {"servers": [
        {"name": "kubernetes-server"}, {"name": "demo-kubernetes", "tools": ["pods_list"]},
        {"name": "kubernetes-server"}, {"name": "demo-kubernetes", "tools": ["pods_log", "pods_list"]}]}},
        format="json")
    assert response.status_code == 202, response.content
    assert AlertSession.objects.get().mcp_selection == {"servers": [
        {"name": "kubernetes-server"}, {"name": "demo-kubernetes", "tools": ["pods_list", "pods_log"]}]}


def test_a_whole_server_wins_over_a_repeated_subset(api):
    response = api.post("/api/v1/alerts", {"data": "x", "mcp": {"servers": [
        {"name": "demo-kubernetes", "tools": ["pods_list"]}, {"name": "demo-kubernetes"}]}}, format="json")
    assert response.status_code == 202, response.content
    assert AlertSession.objects.get().mcp_selection == {"servers": [{"name": "demo-kubernetes"}]}


# ---- every /api/ answer is JSON --------------------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [
    ("post", "/api/v1/nope"), ("delete", "/api/v1/sessions/null,null"), ("post", "/api/v1/sessions/null,null/cancel"),
    ("post", "/api/v1/sessions/null,null/chat/messages"), ("put", "/api/v1/alerts/"), ("patch", "/api/nope"),
    ("get", "/api/v2/sessions"),
])
@pytest.mark.parametrize("debug", [False, True], ids=["debug_off", "debug_on"])
def test_unknown_api_path_is_a_json_404_whatever_the_method(settings, method, path, debug):
    settings.DEBUG = debug
    client = Client(REMOTE_ADDR="127.0.0.1", enforce_csrf_checks=True)  # as a browser: CSRF checks on
    body_kwargs = {} if method == "get" else {"data": "{}", "content_type": "application/json"}
    body = problem(getattr(client, method)(path, **body_kwargs), 404)
    assert body == {"error": "not_found", "detail": f"No API endpoint or resource at {path}"}


@pytest.mark.parametrize("method, path", [("put", "/api/v1/alerts"), ("delete", "/api/v1/sessions"),
                                          ("post", "/api/v1/sessions/00000000-0000-0000-0000-000000000000/summary")])
def test_wrong_method_on_a_known_path_is_a_json_405(api, method, path):
    body = problem(getattr(api, method)(path), 405)
    assert body["error"] == "method_not_allowed"


def test_real_endpoints_still_demand_the_csrf_token_of_a_session_login(tmp_path):
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": "token"}}})
    client = APIClient(REMOTE_ADDR="10.0.0.9", enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_user("alice"))
    refused = client.post("/api/v1/alerts", {"data": "x"}, format="json")
    assert refused.status_code == 403 and "CSRF" in str(refused.json()["detail"])
    assert problem(client.post("/api/v1/nope", {"data": "x"}, format="json"), 404)["error"] == "not_found"
