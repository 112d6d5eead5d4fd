# The adr-review image: the GitHub Action (action.yml runs the released image from GHCR) and the App
# (`adr-review serve`, docs/app.md). From source: `docker build -t adr-review .`; the smoke test:
# `docker build --target test .`; on a machine with no image registry: scripts/build_image.sh.
#
# Stages: python (Debian + its python3), build (a venv installed from requirements/image.txt, every
# file hash-checked, then the wheel of this checkout), app (what runs), test (smoke test on top of
# app), runtime (the default target, the image that ships).
#
# No USER: GitHub runs Docker actions as the image's default user and requires it to be root (the
# workspace and the file-command files are mounted for it).
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS python
ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
# ca-certificates: the Anthropic client verifies TLS against the system trust store (httpcore2).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && apt-get clean && rm -rf /var/lib/apt/lists/*

FROM python AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv \
 && apt-get clean && rm -rf /var/lib/apt/lists/*
# Dependencies first, from the lock alone, so a code change does not reinstall them. --no-deps: the
# lock is complete, less what scripts/lock.py leaves out of the image on purpose (IMAGE_DROPS).
COPY requirements/image.txt /tmp/requirements/image.txt
RUN python3 -m venv /opt/adr-review \
 && /opt/adr-review/bin/pip install --require-hashes --no-deps -r /tmp/requirements/image.txt
COPY pyproject.toml setup.py README.md LICENSE /src/
COPY app /src/app
COPY prompts /src/prompts
COPY templates /src/templates
# The wheel carries prompts/ and templates/ as package data; setuptools (from the lock) builds it,
# then the build tools leave the venv.
RUN /opt/adr-review/bin/pip install --no-deps --no-build-isolation --no-index /src \
 && /opt/adr-review/bin/pip uninstall -y setuptools pip

FROM python AS app
COPY --from=build /opt/adr-review /opt/adr-review
# No model-cache path here: the App runs this image too. The Action puts the models into its cached
# folder itself (app/adr_review/entrypoints/action_env.py, export_model_cache).
ENV PATH=/opt/adr-review/bin:$PATH
ENTRYPOINT ["adr-review"]
CMD ["action"]

# The smoke test: the version, the README's offline review in both languages, outside any checkout,
# the image leaving out exactly what the lock says, and the Action entrypoint failing cleanly outside
# Actions. A RUN step, so it runs wherever the image builds (even where containers cannot be started).
FROM app AS test
COPY examples /tmp/smoke/examples
RUN set -eu; cd /tmp/smoke; \
    adr-review --version | grep -Eq '^adr-review [0-9]+\.[0-9]+\.[0-9]+'; \
    adr-review review examples/proposals/0008-adopt-kafka-for-order-events.md --adr-dir examples/adr > en.md; \
    head -n 1 en.md | grep -q '^<!-- adr-review:v1 '; grep -q '^## 📐 ADR review' en.md; \
    adr-review review examples/proposals/0009-session-store-redis.md --adr-dir examples/adr > ja.md; \
    grep -q 'ADR レビュー' ja.md; \
    python3 -c "import ssl; assert ssl.create_default_context().cert_store_stats()['x509_ca'] > 0, 'no CA'"; \
    python3 -c "import importlib.util as u, sys; left = [m for m in ('onnxruntime', 'tokenizers', 'kubernetes', 'pip', 'setuptools') if u.find_spec(m)]; sys.exit(f'still installed: {left}' if left else 0)"; \
    if adr-review action > action.log 2>&1; then echo 'action outside Actions must fail' >&2; exit 1; fi; \
    grep -q '^::error' action.log; \
    rm -rf /tmp/smoke; echo 'smoke test passed'

FROM app AS runtime
