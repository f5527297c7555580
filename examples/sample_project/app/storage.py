import json

from . import models


class Storage:
    """In-memory store, serialisable to JSON."""

    def __init__(self):
        self.rows = {}

    def put(self, row: models.Base):
        self.rows[row.id] = row

    def dump(self):
        return json.dumps({k: vars(v) for k, v in self.rows.items()})
