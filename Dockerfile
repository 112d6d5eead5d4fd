# The adr-review image: the GitHub Action (action.yml runs the released image from GHCR) and the App
# (`adr-review serve`, docs/app.md). From source: `docker build -t adr-review .`; the smoke test:
# `docker build --target test .`; on a machine with no image registry: scripts/build_image.sh.
#
# Stages: python (Debian + its python3), build (a venv installed from requirements/image.txt, every
# file hash-checked, then the wheel of this checkout), lexicon (adds JMdict's jamdict-data from
# requirements/lexicon.txt and derives the cross-language channel's compact lexicon from it), venv
# (the build's venv less its build tools), app (what runs: the venv and the derived lexicon, not
# jamdict-data), test (smoke test on top of app), runtime (the default target, the image that ships).
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
# The wheel carries prompts/ and templates/ as package data; setuptools (from the lock) builds it.
RUN /opt/adr-review/bin/pip install --no-deps --no-build-isolation --no-index /src

# The cross-language channel's dictionary: jamdict-data (311 MB installed) only here, to derive the
# compact lexicon (21.7 MB) with the code the channel reads it with, beside JMdict's licence
# statement. Only /opt/jmdict-gloss leaves this stage. jamdict-data is an sdist that unpacks its
# database while it builds a wheel: --use-pep517 builds one with the image lock's setuptools (pip's
# legacy `setup.py install` would install the package without the database).
FROM build AS lexicon
COPY requirements/lexicon.txt /tmp/requirements/lexicon.txt
RUN /opt/adr-review/bin/pip install --require-hashes --no-deps --no-build-isolation --use-pep517 -r /tmp/requirements/lexicon.txt \
 && /opt/adr-review/bin/python -m adr_review.entrypoints.build_lexicon /opt/jmdict-gloss/jmdict-gloss.sqlite

# The build tools leave the venv.
FROM build AS venv
RUN /opt/adr-review/bin/pip uninstall -y setuptools pip

FROM python AS app
COPY --from=venv /opt/adr-review /opt/adr-review
COPY --from=lexicon /opt/jmdict-gloss /opt/jmdict-gloss
# No model-cache path here: the App runs this image too. The Action puts the models into its cached
# folder itself (app/adr_review/entrypoints/action_env.py, export_model_cache). The prebuilt lexicon
# is read in place (app/adr_review/adapters/gloss_lexicon.py), so `retrieval.multilingual: auto` works.
ENV PATH=/opt/adr-review/bin:$PATH \
    ADR_REVIEW_GLOSS_LEXICON=/opt/jmdict-gloss/jmdict-gloss.sqlite
ENTRYPOINT ["adr-review"]
CMD ["action"]

# The smoke test: the version, the README's offline review in both languages and its cross-language
# example (the English proposal gets the Japanese ADR-0006 by a cross-language slot), outside any
# checkout, the image leaving out exactly what the lock says (and jamdict-data), JMdict's licence
# beside the lexicon, and the Action entrypoint failing cleanly outside Actions. A RUN step, so it runs
# wherever the image builds (even where containers cannot be started).
FROM app AS test
COPY examples /tmp/smoke/examples
RUN set -eu; cd /tmp/smoke; \
    adr-review --version | grep -Eq '^adr-review [0-9]+\.[0-9]+\.[0-9]+'; \
    adr-review review examples/proposals/0008-adopt-kafka-for-order-events.md --adr-dir examples/adr > en.md; \
    head -n 1 en.md | grep -q '^<!-- adr-review:v1 '; grep -q '^## 📐 ADR review' en.md; \
    adr-review review examples/proposals/0009-session-store-redis.md --adr-dir examples/adr > ja.md; \
    grep -q 'ADR レビュー' ja.md; \
    adr-review recall --adr-dir examples/adr --file examples/proposals/0008-adopt-kafka-for-order-events.md --explain > xl.txt 2>&1; \
    grep -A2 -E '^ *[0-9]+\. ADR-0006 ' xl.txt | grep -q '(cross-language slot)' || { cat xl.txt >&2; exit 1; }; \
    if grep -q 'cross-language recall (' xl.txt; then cat xl.txt >&2; exit 1; fi; \
    grep -q 'Electronic Dictionary Research and Development Group' /opt/jmdict-gloss/JMdict-LICENCE.md; \
    python3 -c "import ssl; assert ssl.create_default_context().cert_store_stats()['x509_ca'] > 0, 'no CA'"; \
    python3 -c "import importlib.util as u, sys; left = [m for m in ('onnxruntime', 'tokenizers', 'kubernetes', 'pip', 'setuptools', 'jamdict_data') if u.find_spec(m)]; sys.exit(f'still installed: {left}' if left else 0)"; \
    if adr-review action > action.log 2>&1; then echo 'action outside Actions must fail' >&2; exit 1; fi; \
    grep -q '^::error' action.log; \
    rm -rf /tmp/smoke; echo 'smoke test passed'

FROM app AS runtime
