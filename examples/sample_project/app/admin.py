from .bot import EchoBot


class AdminBot(EchoBot):
    """An EchoBot that also understands /commands."""

    def handle(self, user_id, text):
        if text.startswith("/"):
            return self.command(text[1:])
        return super().handle(user_id, text)

    def command(self, name):
        return f"unknown command: {name}"
