from django.contrib.auth import get_user_model

from config.base.errors import NotFoundError


def user_find(username: str):
    """A user by username, for operator commands."""
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise NotFoundError(f"no user named {username!r}") from None
