"""The PyGithub adapter against `responses` (an in-memory GitHub, tests/fakes/github_api.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses

from adr_review.adapters.github import GitHubAdapter, RetryPolicy, retry_wait
from adr_review.core.marker import marker
from adr_review.pipeline.plans.publish import upsert_comment
from adr_review.pipeline.ports import GitHubError
from tests.fakes.github_api import FakeGitHub, Fault, blob_sha

REPO = "Codertocat/Hello-World"


class Clock:
    """Injectable sleep + clock: sleeping advances time and is recorded, never waits."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield FakeGitHub(REPO).install(rsps)


@pytest.fixture
def clock(fake: FakeGitHub) -> Clock:
    return Clock(fake.now)


@pytest.fixture
def gh(clock: Clock) -> GitHubAdapter:
    return GitHubAdapter("t0ken", sleep=clock.sleep, clock=clock.time, seconds_between_writes=None)


def test_changed_files_reads_every_page(fake: FakeGitHub, gh: GitHubAdapter) -> None:
    changes: dict[str, bytes | None] = {f"docs/adr/{i:04d}-x.md": b"# x %d" % i for i in range(5)}
    changes["docs/adr/old.md"] = None
    fake.put_file("master", "docs/adr/old.md", b"old")
    fake.add_pull(2, head="h", base="b", changes=changes)
    files = gh.changed_files(REPO, 2)
    assert [f.path for f in files] == list(changes)
    assert fake.count("GET", r"/pulls/2/files$") == 3  # 6 files, pages of 2
    assert files[0].status == "added" and files[0].blob_sha == blob_sha(b"# x 0")
    assert files[-1].status == "removed"


def test_read_file_list_files_and_blobs(fake: FakeGitHub, gh: GitHubAdapter) -> None:
    fake.put_file("master", "docs/adr/0001-a.md", "# ADR-0001 日本語".encode())
    fake.put_file("master", "docs/adr/sub/0002-b.md", b"# two")
    fake.put_file("master", "src/app.py", b"print()")
    assert gh.read_file(REPO, "docs/adr/0001-a.md", "master") == "# ADR-0001 日本語".encode()
    assert gh.read_file(REPO, "docs/adr/missing.md", "master") is None
    listed = gh.list_files(REPO, "master", ["docs/adr"])
    assert [f.path for f in listed] == ["docs/adr/0001-a.md", "docs/adr/sub/0002-b.md"]
    assert gh.read_blob(REPO, listed[1].blob_sha) == b"# two"
    assert len(gh.list_files(REPO, "master", [""])) == 3


def test_upsert_creates_once_then_edits(fake: FakeGitHub, gh: GitHubAdapter) -> None:
    path = "docs/adr/0002-b.md"
    fake.add_comment(2, "unrelated", login="alice", association="MEMBER")
    first, created = upsert_comment(gh, REPO, 2, path, marker(path, "k1") + "\nfirst")
    assert created and first.marker_key == "k1" and first.marker_path == path
    second, created_again = upsert_comment(gh, REPO, 2, path, marker(path, "k2") + "\nsecond")
    assert not created_again and second.id == first.id
    bodies = [c["body"] for c in fake.comments_on(2)]
    assert bodies == ["unrelated", marker(path, "k2") + "\nsecond"]
    found = gh.find_comment(REPO, 2, path)
    assert found is not None and found.marker_key == "k2"
    assert gh.find_comment(REPO, 2, "docs/adr/other.md") is None


def test_a_stranger_pasting_a_marker_does_not_capture_the_comment(
    fake: FakeGitHub, gh: GitHubAdapter
) -> None:
    path = "docs/adr/0002-b.md"
    fake.add_comment(2, marker(path, "forged") + "\nhi", login="mallory", association="NONE")
    _, created = upsert_comment(gh, REPO, 2, path, marker(path, "k1") + "\nreview")
    assert created
    assert [c["user"]["login"] for c in fake.comments_on(2)] == ["mallory", "github-actions[bot]"]
    assert fake.comments_on(2)[0]["body"].endswith("hi")


def test_comment_listing_follows_pages(fake: FakeGitHub, gh: GitHubAdapter) -> None:
    path = "docs/adr/0002-b.md"
    for i in range(5):
        fake.add_comment(2, f"chatter {i}")
    fake.add_comment(2, marker(path, "old") + "\nbody", login="github-actions[bot]", user_type="Bot")
    _, created = upsert_comment(gh, REPO, 2, path, marker(path, "new") + "\nbody")
    assert not created
    assert len(fake.comments_on(2)) == 6


def test_reaction_and_permission(fake: FakeGitHub, gh: GitHubAdapter) -> None:
    fake.known_comment_ids.add(492700400)
    gh.add_reaction(REPO, 492700400, "eyes")
    assert fake.reactions == [(492700400, "eyes")]
    fake.permissions["alice"] = "write"
    assert gh.permission(REPO, "alice") == "write"
    assert gh.permission(REPO, "stranger") == "none"  # 404: not a collaborator


def test_rate_limited_then_ok_waits_until_the_reset(
    fake: FakeGitHub, gh: GitHubAdapter, clock: Clock
) -> None:
    fake.add_pull(2, head="h", base="b", changes={"docs/adr/1.md": b"x"})
    fake.fail("GET", r"/pulls/2/files$", Fault(403, rate_limited=True, reset_in=30))
    assert [f.path for f in gh.changed_files(REPO, 2)] == ["docs/adr/1.md"]
    assert clock.sleeps == [31.0]  # reset - now + 1
    assert fake.count("GET", r"/pulls/2/files$") == 2


def test_retry_after_is_honoured(fake: FakeGitHub, gh: GitHubAdapter, clock: Clock) -> None:
    fake.put_file("master", "a.md", b"a")
    fake.fail(
        "GET", r"/contents/a.md$", Fault(429, headers={"retry-after": "7"}, body={"message": "slow down"})
    )
    assert gh.read_file(REPO, "a.md", "master") == b"a"
    assert clock.sleeps == [7.0]


def test_secondary_rate_limit_without_headers_waits_a_minute(
    fake: FakeGitHub, gh: GitHubAdapter, clock: Clock
) -> None:
    fake.put_file("master", "a.md", b"a")
    fake.fail(
        "GET", r"/contents/a.md$", Fault(403, body={"message": "You have exceeded a secondary rate limit."})
    )
    assert gh.read_file(REPO, "a.md", "master") == b"a"
    assert clock.sleeps == [60.0]


def test_server_errors_forever_end_in_a_reported_failure(
    fake: FakeGitHub, gh: GitHubAdapter, clock: Clock
) -> None:
    fake.fail("GET", r"/pulls/2/files$", Fault(500), times=100)
    with pytest.raises(GitHubError) as info:
        gh.changed_files(REPO, 2)
    assert info.value.status == 500
    assert "gave up after 5 attempt(s)" in str(info.value)
    assert clock.sleeps == [2.0, 4.0, 8.0, 16.0]  # bounded: max_attempts=5
    assert fake.count("GET", r"/pulls/2/files$") == 5


def test_a_wait_beyond_the_budget_fails_at_once(fake: FakeGitHub, clock: Clock) -> None:
    gh = GitHubAdapter("t", sleep=clock.sleep, clock=clock.time, policy=RetryPolicy(max_total_wait_s=60))
    fake.fail("GET", r"/pulls/2/files$", Fault(403, rate_limited=True, reset_in=3600))
    with pytest.raises(GitHubError, match="rate limit"):
        gh.changed_files(REPO, 2)
    assert clock.sleeps == []


def test_permission_errors_are_not_retried(fake: FakeGitHub, gh: GitHubAdapter, clock: Clock) -> None:
    fake.fail(
        "POST", r"/issues/2/comments$", Fault(403, body={"message": "Resource not accessible by integration"})
    )
    with pytest.raises(GitHubError) as info:
        gh.create_comment(REPO, 2, "hello")
    assert info.value.status == 403 and "Resource not accessible" in info.value.message
    assert clock.sleeps == []


def test_a_post_that_landed_despite_a_502_is_not_repeated(fake: FakeGitHub, gh: GitHubAdapter) -> None:
    path = "docs/adr/1.md"
    fake.fail("POST", r"/issues/2/comments$", Fault(502, landed=True))
    comment, created = upsert_comment(gh, REPO, 2, path, marker(path, "k") + "\nbody")
    assert created and comment.marker_key == "k"
    assert len(fake.comments_on(2)) == 1
    assert fake.count("POST", r"/issues/2/comments$") == 1


def test_a_401_with_a_token_fails_at_once(fake: FakeGitHub, gh: GitHubAdapter, clock: Clock) -> None:
    """Only an App installation token is minted again (tests/server/test_app_auth_catchup.py)."""
    fake.fail("GET", r"/pulls/2$", Fault(401, body={"message": "Bad credentials"}))
    with pytest.raises(GitHubError) as info:
        gh.pull_request(REPO, 2)
    assert info.value.status == 401 and clock.sleeps == [] and fake.count("GET", r"/pulls/2$") == 1


def test_every_request_of_a_delivery_scoped_client_carries_the_delivery_id(
    fake: FakeGitHub, clock: Clock
) -> None:
    path = "docs/adr/0002-b.md"
    fake.add_pull(2, head="h", base="b", changes={path: b"# two"})
    fake.known_comment_ids.add(492700400)
    fake.fail("GET", r"/pulls/2/files$", Fault(502))  # a retried request carries it too
    gh = GitHubAdapter("t", delivery_id="guid-1", sleep=clock.sleep, clock=clock.time)
    gh.pull_request(REPO, 2)
    gh.changed_files(REPO, 2)
    gh.read_file(REPO, path, "h")
    upsert_comment(gh, REPO, 2, path, marker(path, "k") + "\nbody")
    gh.add_reaction(REPO, 492700400, "eyes")
    assert len(fake.request_headers) >= 7
    assert {h.get("X-GitHub-Delivery") for h in fake.request_headers} == {"guid-1"}
    assert {h.get("Authorization") for h in fake.request_headers} == {"token t"}
    GitHubAdapter("t", sleep=clock.sleep).default_branch(REPO)
    assert "X-GitHub-Delivery" not in fake.request_headers[-1]


def test_base_url_for_enterprise_server() -> None:
    gh = GitHubAdapter("t", base_url="https://ghe.example.com/api/v3", sleep=lambda s: None)
    with responses.RequestsMock() as rsps:
        rsps.add("GET", "https://ghe.example.com:443/api/v3/repos/o/r", json={"default_branch": "trunk"})
        assert gh.default_branch("o/r") == "trunk"
        assert rsps.calls[0].request.headers["Authorization"] == "token t"


@pytest.mark.parametrize(
    ("status", "headers", "message", "attempt", "expected"),
    [
        (
            403,
            {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1100"},
            "API rate limit exceeded",
            1,
            101.0,
        ),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "900"}, "", 1, 1.0),  # reset already passed
        (429, {"Retry-After": "12"}, "", 3, 12.0),
        (429, {}, "Too Many Requests", 1, 60.0),  # 429 is a rate limit even without headers
        (403, {}, "You have exceeded a secondary rate limit", 1, 60.0),
        (403, {}, "Resource not accessible by integration", 1, None),
        (404, {}, "Not Found", 1, None),
        (422, {}, "Validation Failed", 1, None),
        (500, {}, "", 1, 2.0),
        (502, {}, "", 3, 8.0),
        (503, {"retry-after": "5"}, "", 1, 5.0),
        (None, {}, "ConnectionError", 2, 4.0),
    ],
)
def test_retry_wait(
    status: int | None, headers: dict[str, str], message: str, attempt: int, expected: float | None
) -> None:
    assert retry_wait(status, headers, message, attempt, now=1000.0, policy=RetryPolicy()) == expected


def test_the_identity_is_asked_once_and_a_refused_edit_creates_our_own(
    fake: FakeGitHub, gh: GitHubAdapter
) -> None:
    path = "docs/adr/0002-b.md"
    fake.add_comment(2, marker(path, "k0") + "\nours", login="github-actions[bot]", user_type="Bot")
    fake.fail("PATCH", r"/issues/comments/\d+$", Fault(403, body={"message": "Resource not accessible"}))
    _, created = upsert_comment(gh, REPO, 2, path, marker(path, "k1") + "\nreview")
    assert created and len(fake.comments_on(2)) == 2
    second, created_again = upsert_comment(gh, REPO, 2, path, marker(path, "k2") + "\nagain")
    assert not created_again and second.id == fake.comments_on(2)[1]["id"]  # the newest of ours
    assert fake.count("POST", r"^/graphql$") == 1  # `viewer { login }`, once per client
