"""Every Lua script the operator runs in Redis, one file each, and the way Python names, composes and calls them.

A script's file is in the folder of the package that calls it (``workqueue/``, ``engine/``, ``cache/``): ``engine``
and ``cache`` scripts may use the ``workqueue`` libraries, never the other way round. :mod:`redisscripts.source`
loads a script by name with the libraries it names on its first line; :mod:`redisscripts.script` declares its keys and
arguments by name, beside its caller; :mod:`redisscripts.combined` runs several as one (a round trip's EVALSHA).
Every key they touch is named in :mod:`workqueue.keyspace`.

It imports nothing of the project: the packages that run scripts import it.
"""

from redisscripts.script import Call, Registered, Script

__all__ = ["Call", "Registered", "Script"]
