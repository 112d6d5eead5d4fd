"""ONE GitHub client stack on PyGithub: REST, App installation auth and the App's hook deliveries, all
through PyGithub's Requester and one retry policy.

    rest.py     GitHubAdapter: the GitHubPort of one run (a token, or an installation of the App)
    retry.py    RetryPolicy, retry_wait, Retrier: the one retry loop of every call
    app.py      App JWT and installation tokens (PyGithub's Auth), the delivery header, hook deliveries
    clients.py  GitHubClients: what the entrypoints compose (for_run, deliveries, close)

Importing this package does not import PyGithub; building a client does.
"""

from adr_review.adapters.github.clients import GitHubClients, load_private_key
from adr_review.adapters.github.rest import DEFAULT_API_URL, GitHubAdapter
from adr_review.adapters.github.retry import RetryPolicy, retry_wait

__all__ = [
    "DEFAULT_API_URL",
    "GitHubAdapter",
    "GitHubClients",
    "RetryPolicy",
    "load_private_key",
    "retry_wait",
]
