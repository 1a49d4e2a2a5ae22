from .runner import compress


def archive(names):
    done = []
    for name in names:
        compress(name)
        done.append(name)
    return done
