from app.handlers import on_message


def enabled():
    return [print]


def replay(user_id, texts):
    for text in texts:
        on_message(user_id, text)
