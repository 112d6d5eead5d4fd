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

BASE_CODE = {
    PYPROJECT: '[project]\nname = "order"\ndependencies = [\n    "fastapi>=0.110",\n    "psycopg[binary]>=3.1",\n]\n',
    STORE: (
        "import psycopg  # the order service's PostgreSQL database\npass\n"
        "def connect(dsn): return psycopg.connect(dsn)  # PostgreSQL transactions for orders and payments\n"
    ),
    BUTTON: 'export const Button = () => <button className="primary">Save</button>;\n',
}
MONGO_CHANGE = {
    PYPROJECT: BASE_CODE[PYPROJECT].replace('"psycopg[binary]>=3.1"', '"pymongo>=4.6"'),
    STORE: (
        "from pymongo import MongoClient  # orders move to a MongoDB document database\npass\n"
        "def connect(url): return MongoClient(url).orders  # MongoDB document database for orders and payments\n"
    ),
}
UNRELATED_CHANGE = {BUTTON: BASE_CODE[BUTTON].replace('"primary"', '"primary rounded"')}
DECISION = "We will not adopt MongoDB or another document database for orders, payments or carts."
ADDED_LINE = "+ `services/order/store.py` line 1: `from pymongo import MongoClient"  # as the comment lists it
