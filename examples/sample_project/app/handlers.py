from app import bot


def on_message(user_id, text):
    from app.plugins import enabled

    for plugin in enabled():
        plugin(text)
    return bot.EchoBot().handle(user_id, text)
