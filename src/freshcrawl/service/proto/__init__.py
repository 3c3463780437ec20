"""The URLFrontier protocol: freshcrawl's ``urlfrontier.proto`` and the Python modules generated from it.

``urlfrontier_pb2`` (messages) and ``urlfrontier_pb2_grpc`` (service stub and servicer) are generated
and committed, so that an install needs no code generation. After editing the ``.proto`` file,
regenerate them from the repository root with::

    python -m freshcrawl.service.proto

(``grpcio-tools`` must be installed; the import root is ``src``, so the gRPC module imports the
messages by their package path.)
"""
