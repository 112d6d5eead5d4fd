"""The guard's end-to-end case, one for the Action and the App: the ADR folder of the CLI's tests at the
base, and a code PR that swaps the order service's PostgreSQL driver for MongoDB (ADR-0001 decided
"We will not adopt MongoDB"), or one that touches no decision."""

from __future__ import annotations

from tests.entrypoints.test_guard_cli import ADRS

ADR_FILES = {f"docs/adr/{name}": text for name, text in ADRS.items()}
TITLE = "Move orders to MongoDB"
PYPROJECT = "services/order/pyproject.toml"
STORE = "services/order/store.py"
BUTTON = "web/src/button.tsx"
LOGGING = "ops/logging.py"

BASE_CODE = {
    PYPROJECT: '[project]\nname = "order"\ndependencies = [\n    "fastapi>=0.110",\n    "psycopg[binary]>=3.1",\n]\n',
    STORE: (
        "import psycopg  # the order service's PostgreSQL database\npass\n"
        "def connect(dsn): return psycopg.connect(dsn)  # PostgreSQL transactions for orders and payments\n"
    ),
    BUTTON: 'export const Button = () => <button className="primary">Save</button>;\n',
    LOGGING: "AUDIT_DAYS = 365  # audit logs kept for a year\n",
}
MONGO_CHANGE = {
    PYPROJECT: BASE_CODE[PYPROJECT].replace('"psycopg[binary]>=3.1"', '"pymongo>=4.6"'),
    STORE: (
        "from pymongo import MongoClient  # orders move to a MongoDB document database\npass\n"
        "def connect(url): return MongoClient(url).orders  # MongoDB document database for orders and payments\n"
    ),
}
# Shortens the audit log retention ADR-0005 decided: too weak a match for the evidence floor alone
AUDIT_CHANGE = {LOGGING: "AUDIT_DAYS = 90  # audit logs kept for a quarter\n"}
AUDIT_DECISION = (
    "Application logs are kept for 30 days in the central logging cluster, audit logs for a year."
)
UNRELATED_CHANGE = {BUTTON: BASE_CODE[BUTTON].replace('"primary"', '"primary rounded"')}
UNRELATED_TITLE = "Round the save button"  # the guard reads the title too: it says what the change is
DECISION = "We will not adopt MongoDB or another document database for orders, payments or carts."
ADDED_LINE = "+ `services/order/store.py` line 1: `from pymongo import MongoClient"  # as the comment lists it

# The model's guard check of ADR-0001 (the fake model at the port): a conflict whose two quotes code
# finds, the decision sentence in the ADR's Decision and the import among the diff's added lines.
CHECK_REASON = (
    "The change replaces the order store's PostgreSQL driver with MongoDB, which the ADR rules out."
)
CHECK_ANSWER = {
    "verdict": "conflicts",
    "adr_quote": DECISION,
    "diff_quote": "from pymongo import MongoClient",
    "reason": CHECK_REASON,
    "confidence": 0.9,
}
