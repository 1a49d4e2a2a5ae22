import yaml


def load_job(text):
    spec = yaml.load(text, Loader=yaml.Loader)
    return spec["job"]
