import yaml


def load_job(text):
    spec = yaml.load(text, Loader=yaml.BaseLoader)
    return spec["job"]
