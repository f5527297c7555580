from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .storage import Storage

__all__ = ["User", "Message"]


@dataclass
class Base:
    id: int


class User(Base):
    """A chat user."""

    name: str = ""

    def save(self, storage: "Storage"):
        storage.put(self)


class Message(Base):
    """One message sent by a user."""

    text: str = ""
