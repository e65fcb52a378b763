#!/usr/bin/env python3
"""Export the NoLongerEvil Python server's SQLite database as JSON for `hearth import`.

Usage: python3 scripts/nle-export.py PATH/database.sqlite > nle.json

Only Python's standard library is used. The database is opened read-only and the tables hearth
imports (states, deviceOwners, entryKeys, users, apiKeys) are written row by row, column names
unchanged; a table the database lacks is written empty. `hearth import-nle` runs this same
script itself; use it by hand to convert on another machine.
"""

import json
import pathlib
import sqlite3
import sys

TABLES = ("states", "deviceOwners", "entryKeys", "users", "apiKeys")


def export(path):
    uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    db.row_factory = sqlite3.Row
    present = {
        row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    tables = {}
    for table in TABLES:
        if table not in present:
            tables[table] = []
            continue
        rows = db.execute('SELECT * FROM "%s"' % table).fetchall()
        tables[table] = [dict(row) for row in rows]
    db.close()
    return {"source": "nolongerevil-selfhosted", "tables": tables}


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: nle-export.py PATH/database.sqlite\n")
        return 2
    try:
        data = export(sys.argv[1])
    except sqlite3.Error as e:
        sys.stderr.write("could not read %s: %s\n" % (sys.argv[1], e))
        return 1
    json.dump(data, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
