import pickle


def save_model(model, path):
    with open(path, "wb") as fh:
        pickle.dump(model, fh)
