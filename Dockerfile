# The adr-review GitHub Action (runs: using: docker in action.yml). Also usable on its own:
#   docker run --rm -e GITHUB_EVENT_NAME -e GITHUB_EVENT_PATH ... adr-review action
#
# Only what runs goes in: the package, the prompts and the templates it reads at runtime (allow-list in
# .dockerignore). No tests, no dev tools, no caches.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    ADR_REVIEW_MODEL_CACHE=/github/workspace/.adr-review/models

# Dependencies first, from pyproject.toml alone, so a code change does not reinstall them.
COPY pyproject.toml README.md /opt/adr-review/
RUN python -c "import tomllib; deps = tomllib.load(open('/opt/adr-review/pyproject.toml', 'rb'))['project']['dependencies']; open('/tmp/requirements.txt', 'w').write(chr(10).join(deps))" \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

COPY app /opt/adr-review/app
COPY prompts /opt/adr-review/prompts
COPY templates /opt/adr-review/templates
# Editable: prompts/ and templates/ are found next to the package (app/prompts.py, app/core/render.py).
RUN pip install --no-cache-dir --no-deps -e /opt/adr-review \
 && adr-review --help > /dev/null

# Non-root. GitHub mounts the workspace and the file-command files (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY)
# owned by the runner user, uid 1001 on GitHub-hosted runners, so the same uid can write them.
# Self-hosted runners with another uid: see docs/action.md ("Docker image").
RUN useradd --uid 1001 --no-create-home --home-dir /github/home --shell /usr/sbin/nologin adr-review
USER 1001

ENTRYPOINT ["adr-review"]
CMD ["action"]
