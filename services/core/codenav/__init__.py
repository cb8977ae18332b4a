"""codenav core: the shared library every service wires up.

Light modules (``config``, ``errors``, ``versions``, ``tools``, ``client``, ``render``)
import nothing beyond httpx, so the stdio adapter can use them on a laptop without the
server dependencies. Everything else (db, parse, index, search) needs the ``server`` extra.
"""

__version__ = "0.1.0"
