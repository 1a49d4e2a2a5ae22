import jsonpickle
from flask import request


def import_settings():
    settings = jsonpickle.decode(request.get_data(as_text=True))
    return settings
