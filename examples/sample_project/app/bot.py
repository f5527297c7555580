import requests

from .models import *
from .storage import Storage
from .utils import retry_with_backoff as retry


class EchoBot:
    def __init__(self):
        self.storage = Storage()

    def handle(self, user_id, text):
        user = User(id=user_id, name="anon")
        user.save(self.storage)
        message = Message(id=len(self.storage.rows), text=text)
        return retry(lambda: self.send(message))

    def send(self, message):
        return requests.post("https://example.invalid/send", json={"text": message.text})


# Registers the admin variant; admin imports this module back (a cycle).
from . import admin  # noqa: E402
