"""Amazon Bedrock and Google Vertex AI through the SDK's own clients (AnthropicBedrock, AnthropicVertex),
at the HTTP layer against the fake Messages server on 127.0.0.1: the routes, the model ids, the auth
headers. Credentials are dummies; SigV4 signing is computed offline by botocore, nothing leaves the host."""

from __future__ import annotations

import pytest

from adr_review.adapters.llm import AnthropicLlm, Connection, make_llm, provider_model_id, provider_of
from adr_review.config import PROVIDER_MODEL_IDS, LlmSettings, RepoConfig, Settings
from adr_review.entrypoints.action_env import ActionInputs, input_env_name
from adr_review.pipeline.ports import LlmError, LlmRequest
from tests.fakes.messages_server import FakeMessagesServer, Reply

ANSWER = {"citations": []}


def request(model: str) -> LlmRequest:
    return LlmRequest(
        prompt_name="recall-pre-gate",
        system="You recall ADRs.",
        user="<proposal/>",
        cacheable_prefix="<candidate_adrs/>",
        output_schema={"type": "object"},
        model=model,
        temperature=0.0,
        max_tokens=200,
    )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """Static dummy AWS credentials only: no profile, no config files, no instance metadata lookups."""
    for var in (
        "AWS_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy-secret")


def bedrock(server: FakeMessagesServer, **settings: object) -> AnthropicLlm:
    s = LlmSettings.model_validate({"provider": "bedrock", "fallback_model": None, **settings})
    return AnthropicLlm(
        settings=s, connection=Connection("bedrock", base_url=server.base_url, region="us-east-1")
    )


@pytest.mark.usefixtures("aws")
def test_bedrock_invokes_the_mapped_model_signed_with_sigv4(fake_anthropic: FakeMessagesServer) -> None:
    fake_anthropic.script("recall-pre-gate", Reply(answer=ANSWER))
    response = bedrock(fake_anthropic).complete(request("claude-sonnet-5-5"))
    call = fake_anthropic.calls()[0]
    assert call.path == "/model/anthropic.claude-sonnet-5-5/invoke"
    auth = call.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLETEST/")
    assert "/us-east-1/bedrock/aws4_request" in auth and "x-amz-date" in call.headers
    assert call.request["anthropic_version"] == "2026-10-21"  # the SDK's API version, in the body
    assert "temperature" not in call.request
    assert call.request["messages"][0]["content"][0]["type"] == "text"  # the same body as the Claude API
    u = response.usage
    assert u.model == "claude-sonnet-5-5" and u.cost_known and u.cost_usd > 0  # priced by the Claude API id


@pytest.mark.usefixtures("aws")
def test_bedrock_ids_come_from_the_table_and_the_repo_config(fake_anthropic: FakeMessagesServer) -> None:
    llm = bedrock(fake_anthropic, model_ids={"claude-opus-5-5": "global.anthropic.claude-opus-5-5"})
    llm.complete(request("claude-opus-5-5"))
    llm.complete(request("claude-haiku-4-5"))
    paths = [c.path for c in fake_anthropic.calls()]
    assert paths == [
        "/model/global.anthropic.claude-opus-5-5/invoke",  # an inference profile from llm.model_ids
        "/model/anthropic.claude-haiku-4-5-20251001-v1:0/invoke",  # the built-in table (a dated model)
    ]


def test_a_bedrock_api_key_is_sent_as_a_bearer_token(
    fake_anthropic: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-test")
    bedrock(fake_anthropic).complete(request("claude-haiku-5-5"))
    assert fake_anthropic.calls()[0].headers["authorization"] == "Bearer bedrock-api-key-test"


@pytest.mark.usefixtures("aws")
def test_bedrock_without_a_region_is_a_config_error_and_no_request(
    fake_anthropic: FakeMessagesServer,
) -> None:
    settings = LlmSettings(provider="bedrock", fallback_model=None)
    llm = AnthropicLlm(settings=settings, connection=Connection("bedrock", base_url=fake_anthropic.base_url))
    with pytest.raises(LlmError) as err:
        llm.complete(request("claude-haiku-5-5"))
    assert err.value.kind == "config" and "region" in err.value.message
    assert err.value.usage.calls == 0 and fake_anthropic.count() == 0


def vertex(server: FakeMessagesServer, **conn: object) -> AnthropicLlm:
    base: dict[str, object] = {
        "region": "europe-west1",
        "project_id": "proj-test",
        "access_token": "ya29.test",
    }
    base.update(conn)
    settings = LlmSettings(provider="vertex", fallback_model=None)
    return AnthropicLlm(settings=settings, connection=Connection("vertex", base_url=server.base_url, **base))  # type: ignore[arg-type]


def test_vertex_raw_predicts_the_mapped_model_with_the_token(fake_anthropic: FakeMessagesServer) -> None:
    llm = vertex(fake_anthropic)
    llm.complete(request("claude-opus-5-5"))
    llm.complete(request("claude-haiku-4-5"))
    first, second = fake_anthropic.calls()
    prefix = "/projects/proj-test/locations/europe-west1/publishers/anthropic/models/"
    assert first.path == prefix + "claude-opus-5-5:rawPredict"  # 4.6 and later: the Claude API id
    assert second.path == prefix + "claude-haiku-4-5@20251001:rawPredict"  # dated: `@` before the date
    assert first.headers["authorization"] == "Bearer ya29.test"
    assert first.request["anthropic_version"] == "2026-10-21" and "temperature" not in first.request


def test_vertex_without_a_project_is_a_config_error(
    fake_anthropic: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_VERTEX_PROJECT_ID", raising=False)
    with pytest.raises(LlmError) as err:
        vertex(fake_anthropic, project_id=None).complete(request("claude-haiku-5-5"))
    assert err.value.kind == "config" and "project" in err.value.message
    assert fake_anthropic.count() == 0


@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("claude-sonnet-5-5", "anthropic", "claude-sonnet-5-5"),
        ("claude-sonnet-5-5", "bedrock", "anthropic.claude-sonnet-5-5"),
        ("claude-opus-4-6", "bedrock", "anthropic.claude-opus-4-6-v1"),
        ("claude-sonnet-4-5-20250929", "bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("us.anthropic.claude-opus-5-5", "bedrock", "us.anthropic.claude-opus-5-5"),
        ("claude-sonnet-5-5", "vertex", "claude-sonnet-5-5"),
        ("claude-sonnet-4-5-20250929", "vertex", "claude-sonnet-4-5@20250929"),
        ("claude-haiku-4-5", "vertex", "claude-haiku-4-5@20251001"),
        ("claude-haiku-4-5@20251001", "vertex", "claude-haiku-4-5@20251001"),
    ],
)
def test_provider_model_ids(model: str, provider: str, expected: str) -> None:
    assert provider_model_id(model, provider, PROVIDER_MODEL_IDS.get(provider, {})) == expected  # type: ignore[arg-type]


def test_make_llm_picks_the_provider_the_operator_set_over_the_repo_config() -> None:
    config = RepoConfig.model_validate(
        {"llm": {"provider": "vertex", "region": "us-east5", "project_id": "p"}}
    )
    llm = make_llm(Settings(anthropic_api_key=None, vertex_access_token="t"), config)
    assert llm is not None and llm.connection == Connection(
        "vertex", region="us-east5", project_id="p", access_token="t"
    )
    operator = Settings(anthropic_api_key=None, llm_provider="bedrock")
    assert provider_of(operator, config) == "bedrock"
    chosen = make_llm(operator, config)
    assert (
        chosen is not None
        and chosen.connection.provider == "bedrock"
        and chosen.connection.access_token is None
    )
    assert make_llm(Settings(anthropic_api_key=None), RepoConfig()) is None  # the Claude API needs its key


def test_the_provider_setting_reads_its_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADR_REVIEW_LLM_PROVIDER", "bedrock")
    monkeypatch.setenv("ADR_REVIEW_VERTEX_ACCESS_TOKEN", "tok")
    s = Settings()
    assert (s.llm_provider, s.vertex_access_token) == ("bedrock", "tok")


def test_action_inputs_choose_the_provider_region_and_project() -> None:
    env = {
        input_env_name("llm-provider"): "vertex",
        input_env_name("llm-region"): "europe-west4",
        input_env_name("vertex-project-id"): "proj-9",
    }
    inputs = ActionInputs.from_env(env)
    assert inputs.model_available  # no Anthropic key needed: the job's Google credentials
    config = inputs.apply(RepoConfig())
    assert (config.llm.provider, config.llm.region, config.llm.project_id) == (
        "vertex",
        "europe-west4",
        "proj-9",
    )
    assert not ActionInputs.from_env({}).model_available
    from adr_review.config import RepoConfigError

    with pytest.raises(RepoConfigError, match="provider"):
        ActionInputs.from_env({input_env_name("llm-provider"): "azure"}).apply(RepoConfig())


def test_the_actions_llm_factory_follows_the_configs_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from adr_review.entrypoints.action_env import default_llm_factory

    monkeypatch.delenv("ADR_REVIEW_LLM_PROVIDER", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert default_llm_factory(None, RepoConfig()) is None
    keyed = default_llm_factory("sk-test", RepoConfig())
    assert isinstance(keyed, AnthropicLlm) and keyed.connection.api_key == "sk-test"
    cloud = default_llm_factory(None, RepoConfig.model_validate({"llm": {"provider": "bedrock"}}))
    assert isinstance(cloud, AnthropicLlm) and cloud.connection.provider == "bedrock"
