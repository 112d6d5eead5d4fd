#!/usr/bin/env bash
# Builds and smoke-tests the adr-review image on a machine that reaches no image registry, only
# Debian's packages and PyPI: the base is made here from Debian's packages instead of pulled.
#
#   1. debootstrap a Debian bookworm rootfs (minbase), trimmed like debian:bookworm-slim (no docs,
#      man pages or translations), and `podman import` it as localhost/debian:bookworm-slim;
#   2. `podman build --isolation chroot --target test`: the Dockerfile's smoke test, a RUN step
#      (where `podman run` cannot start a container, RUN steps still work);
#   3. `podman build --target runtime`: the image that ships, tagged adr-review:<version>;
#   4. print its size, the size of its site-packages and its number of distributions.
#
# Usage: sudo scripts/build_image.sh [--baseline GIT_REV]
#   --baseline REV  also build REV's Dockerfile the same way and print its figures (the "before" of
#                   docs/benchmarks.md). A Dockerfile FROM python:3.11-slim gets a stand-in base: this
#                   Debian with python3, a venv first on PATH (`python`, `pip`; not byte-identical to the
#                   official image; the dependency layers are what is compared).
# Needs root, debootstrap and podman (apt-get install debootstrap podman). Environment:
#   DEBIAN_MIRROR  (default http://deb.debian.org/debian)
#   WORK           where the rootfs is kept between runs (default /var/tmp/adr-review-image)
set -euo pipefail
cd "$(dirname "$0")/.."

BASELINE=""
if [ "${1:-}" = "--baseline" ]; then BASELINE="${2:?--baseline needs a git revision}"; fi
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
WORK="${WORK:-/var/tmp/adr-review-image}"
BASE=localhost/debian:bookworm-slim
VERSION="$(python3 -c "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['project']['version'])")"
PODMAN=(podman)
BUILD=("${PODMAN[@]}" build --isolation chroot --pull=never --build-arg "BASE=$BASE")

for tool in debootstrap podman; do
  command -v "$tool" > /dev/null || { echo "needs $tool: apt-get install $tool" >&2; exit 1; }
done

# 1. The base image, from Debian's packages.
if ! "${PODMAN[@]}" image exists "$BASE"; then
  mkdir -p "$WORK"
  rootfs="$WORK/rootfs"
  if [ ! -x "$rootfs/usr/bin/apt-get" ]; then
    rm -rf "$rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR"
  fi
  # What debian:*-slim leaves out, and keeps out of later installs.
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
  # ... and the apt caches the official images never keep (their /etc/apt/apt.conf.d/docker-clean).
  cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,locale}/* "$rootfs"/var/lib/apt/lists/* \
         "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
  echo "deb $MIRROR bookworm main" > "$rootfs/etc/apt/sources.list"
  # This machine's own trusted CAs (a TLS-inspecting proxy's, say), where Debian keeps local ones:
  # the Dockerfile's ca-certificates install adds them to the image's bundle, so pip reaches PyPI.
  # Only this local base gets them; the published image is built FROM debian:bookworm-slim.
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  find /usr/local/share/ca-certificates -maxdepth 1 -name '*.crt' -exec cp {} "$rootfs/usr/local/share/ca-certificates/" \;
  tar -C "$rootfs" --numeric-owner -c . | "${PODMAN[@]}" import --change 'CMD ["bash"]' - "$BASE"
fi

size() {  # image -> "<image size> MB, site-packages <n> MB in <k> distributions"
  local image="$1" mnt sp
  mnt="$("${PODMAN[@]}" image mount "$image")"
  sp="$(find "$mnt" -type d -name site-packages -path '*python3*' -not -path '*/proc/*' | head -n 1)"
  printf '%s: image %s MB, site-packages %s MB in %s distributions\n' "$image" \
    "$(( $("${PODMAN[@]}" image inspect --format '{{.Size}}' "$image") / 1000000 ))" \
    "$(( $(du -sb "$sp" | cut -f1) / 1000000 ))" "$(find "$sp" -maxdepth 1 -name '*.dist-info' | wc -l)"
  "${PODMAN[@]}" image unmount "$image" > /dev/null
}

# 2. The smoke test, then 3. the image that ships.
"${BUILD[@]}" --target test -t "adr-review:$VERSION-test" .
"${BUILD[@]}" --target runtime -t "adr-review:$VERSION" .
"${PODMAN[@]}" rmi "adr-review:$VERSION-test" > /dev/null

# 4. The figures of docs/benchmarks.md.
size "adr-review:$VERSION"

# The "before": another revision's Dockerfile, built the same way.
if [ -n "$BASELINE" ]; then
  ctx="$(mktemp -d)"
  trap 'rm -rf "$ctx"' EXIT
  git archive "$BASELINE" | tar -x -C "$ctx"
  if grep -q '^FROM python:3.11-slim' "$ctx/Dockerfile"; then
    printf '%s\n' "FROM $BASE" \
      "RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates && rm -rf /var/lib/apt/lists/*" \
      "RUN python3 -m venv /usr/local/py" "ENV PATH=/usr/local/py/bin:\$PATH" \
      | "${PODMAN[@]}" build --isolation chroot --pull=never -t localhost/python:3.11-slim -f - "$ctx"
    sed -i 's|^FROM python:3.11-slim|FROM localhost/python:3.11-slim|' "$ctx/Dockerfile"
  fi
  "${PODMAN[@]}" build --isolation chroot --pull=never -t "adr-review:baseline-$BASELINE" "$ctx"
  size "adr-review:baseline-$BASELINE"
fi
