"""Dependency names from the changed lines of manifests, one table row per format."""

from __future__ import annotations

import pytest

from adr_review.core.diff import DiffFile, DiffLine
from adr_review.core.manifests import dependencies


def _file(path: str, added: list[str], removed: list[str] = []) -> DiffFile:  # noqa: B006
    return DiffFile(
        path,
        path,
        "modified",
        tuple(DiffLine(t, i) for i, t in enumerate(added, 1)),
        tuple(DiffLine(t, i) for i, t in enumerate(removed, 1)),
    )


@pytest.mark.parametrize(
    ("path", "added", "expected"),
    [
        (
            "pyproject.toml",
            ['    "pymongo>=4.6",', '    "psycopg[binary]>=3.1",', 'name = "svc"'],
            ["pymongo", "psycopg"],
        ),
        ("pyproject.toml", ['requests = "^2.31"', 'python = "^3.11"', "# pymongo = '4'"], ["requests"]),
        (
            "requirements-dev.txt",
            ["redis==5.0.1", "-r base.txt", "kafka-python ; python_version>'3'"],
            ["redis", "kafka-python"],
        ),
        (
            "web/package.json",
            [
                '    "mongoose": "^8.0.0",',
                '    "@aws-sdk/client-s3": "3.1.0",',
                '  "version": "1.0.0",',
                '  "test": "jest"',
            ],
            ["mongoose", "@aws-sdk/client-s3"],
        ),
        (
            "go.mod",
            [
                "require github.com/lib/pq v1.10.9",
                "\tgo.mongodb.org/mongo-driver v1.13.1 // indirect",
                "go 1.22",
            ],
            ["github.com/lib/pq", "pq", "go.mongodb.org/mongo-driver", "mongo-driver"],
        ),
        (
            "Gemfile",
            ['gem "sidekiq", "~> 7.0"', "  gem 'pg'", "source 'https://rubygems.org'"],
            ["sidekiq", "pg"],
        ),
        ("x.gemspec", ['  spec.add_dependency "rack"'], ["rack"]),
        (
            "Cargo.toml",
            ['tokio = { version = "1", features = ["full"] }', 'serde = "1.0"', 'edition = "2021"'],
            ["tokio", "serde"],
        ),
        (
            "deploy/Dockerfile",
            ["FROM --platform=linux/amd64 postgres:16 AS db", "FROM scratch", "FROM ${BASE}", "RUN apt-get"],
            ["postgres"],
        ),
        ("api.dockerfile", ["from ghcr.io/acme/base@sha256:abc"], ["ghcr.io/acme/base", "base"]),
        (
            "infra/main.tf",
            ['provider "google" {', '      source  = "hashicorp/aws"', 'resource "aws_s3_bucket" "b" {'],
            ["google", "aws"],
        ),
        ("src/main.py", ['requests = "^2"'], []),  # not a manifest
    ],
)
def test_dependency_names_per_format(path: str, added: list[str], expected: list[str]) -> None:
    assert [d.name for d in dependencies([_file(path, added)])] == expected


def test_added_and_removed_are_told_apart_and_carry_their_line() -> None:
    deps = dependencies([_file("pyproject.toml", ['    "pymongo>=4.6",'], ['    "psycopg>=3.1",'])])
    assert [(d.name, d.change, d.line) for d in deps] == [
        ("pymongo", "added", '    "pymongo>=4.6",'),
        ("psycopg", "removed", '    "psycopg>=3.1",'),
    ]
