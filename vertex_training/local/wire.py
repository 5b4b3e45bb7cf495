"""The wire of the local Vertex AI: the Vertex AI v1 API over gRPC and REST on one port.

Every method, its gRPC path, its message classes and its REST rules come from the pinned
GAPIC package's generated transports (``transports/grpc.py`` and ``transports/rest_base.py``
of each service), never from a table of our own; the caller supplies the handlers. One
public listener reads the first bytes of each connection: the HTTP/2 preface of a gRPC
client goes on, byte for byte, to a gRPC server on loopback; anything else is HTTP/1.1 and
is answered here, transcoded by the same rules Google's front end uses.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib
import json
import logging
import re
import socket
import threading
import typing
from collections.abc import Callable, Mapping
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

import grpc

log = logging.getLogger(__name__)

SERVICES: tuple[str, ...] = (
    "JobService",
    "ModelService",
    "EndpointService",
    "PredictionService",
    "PersistentResourceService",
    "Operations",
)
"""The services served, by short name: ``google.cloud.aiplatform.v1.*`` and
``google.longrunning.Operations``."""

Admin = Callable[[str, str, Mapping[str, list[str]], bytes], tuple[int, str, bytes]]
"""``admin(method, path, query, body) -> (status, content type, body)`` for ``/local/...``."""

_SYSTEM_PARAMETERS = frozenset({"$alt", "alt", "prettyPrint", "$prettyPrint", "key", "fields"})
"""Query parameters of Google's front end, not of the request message."""
_HTTP_BODY = "google.api.HttpBody"
_PREFACE = b"PRI * HTTP/2.0"


class ServiceError(Exception):
    """What a handler raises: a gRPC status code and a message naming the field."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Method:
    service: str
    """Short name, e.g. ``JobService``."""
    name: str
    """GAPIC snake_case name, e.g. ``create_custom_job``."""
    path: str
    """gRPC path, e.g. ``/google.cloud.aiplatform.v1.JobService/CreateCustomJob``."""
    request_type: type
    """The proto-plus class, or the pb2 class where GAPIC uses one (longrunning, HttpBody)."""
    response_type: type
    http_rules: tuple[dict[str, str], ...]
    """From ``_get_http_options()``: ``method``, ``uri`` and, where the body binds, ``body``."""


def _is_proto_plus(cls: type) -> bool:
    return hasattr(cls, "pb") and hasattr(cls, "wrap")


def _pb_class(cls: type) -> Any:
    return cls.pb() if _is_proto_plus(cls) else cls  # type: ignore[attr-defined]


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


@functools.cache
def methods() -> dict[str, dict[str, Method]]:
    """Service short name -> GAPIC method name -> its :class:`Method` (unary methods only)."""
    from google.protobuf import descriptor_pool, message_factory

    table: dict[str, dict[str, Method]] = {service: {} for service in SERVICES}
    for service in SERVICES[:-1]:
        package = f"google.cloud.aiplatform_v1.services.{_snake(service)}.transports"
        transport = vars(importlib.import_module(f"{package}.grpc"))[f"{service}GrpcTransport"]
        rest = vars(importlib.import_module(f"{package}.rest_base"))[f"_Base{service}RestTransport"]
        for name, prop in vars(transport).items():
            # Each stub property asks its channel for one callable; a stand-in channel that
            # only knows unary_unary records the path (streaming stubs raise, and are skipped).
            made: list[str] = []
            channel = SimpleNamespace(unary_unary=lambda path, made=made, **_: made.append(path))
            with contextlib.suppress(AttributeError):
                if isinstance(prop, property) and prop.fget:
                    prop.fget(SimpleNamespace(_stubs={}, _logged_channel=channel))
            if not made:
                continue
            full_service, rpc = made[0][1:].split("/")
            short = full_service.rsplit(".", 1)[1]
            if short not in (service, "Operations"):
                continue  # the location and IAM mixins
            (request_type,), response_type = typing.get_args(prop.fget.__annotations__["return"])
            if response_type is type(None):  # GAPIC leaves the mixins' responses raw
                pool = descriptor_pool.Default()
                output = pool.FindMethodByName(f"{full_service}.{rpc}").output_type
                response_type = message_factory.GetMessageClass(output)
            rule_class = getattr(rest, f"_Base{rpc}", None)
            rules = tuple(rule_class._get_http_options()) if rule_class else ()
            if known := table[short].get(name):  # every service repeats the operations
                rules = known.http_rules + tuple(r for r in rules if r not in known.http_rules)
            table[short][name] = Method(short, name, made[0], request_type, response_type, rules)
    return table


_VARIABLE = re.compile(r"\{([\w.]+)(?:=([^}]*))?\}")


def _pattern(uri: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """A rule's URI template as a regular expression, and the fields its groups bind."""
    pieces = _VARIABLE.split(uri)
    regex, fields = re.escape(pieces[0]), []
    for field, template, literal in zip(pieces[1::3], pieces[2::3], pieces[3::3], strict=True):
        inner = re.escape(template or "*").replace(r"\*\*", ".+").replace(r"\*", "[^/:]+")
        regex += f"({inner}){re.escape(literal)}"
        fields.append(field)
    return re.compile(regex), tuple(fields)


def _put(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[leaf] = value


def _query_value(descriptor: Any, key: str, values: list[str]) -> Any:
    """A query parameter's values as JSON for its field: a list for a repeated field, a
    bool for a bool; an unknown name is left for the parser to refuse."""
    field = None
    for part in key.split("."):
        if descriptor is None:
            return values[-1]
        field = descriptor.fields_by_name.get(part) or descriptor.fields_by_camelcase_name.get(part)
        descriptor = field.message_type if field else None
    if field is None:
        return values[-1]
    typed = [v == "true" if field.type == field.TYPE_BOOL else v for v in values]
    return typed if field.is_repeated else typed[-1]


def _invoke(handlers: Mapping[str, object], method: Method, request: Any) -> Any:
    handler = getattr(handlers.get(method.service), method.name, None)
    if handler is None:
        raise ServiceError(
            grpc.StatusCode.UNIMPLEMENTED,
            f"{method.path[1:].replace('/', '.')} is not implemented by the local Vertex AI",
        )
    try:
        response = handler(request)
    except ServiceError:
        raise
    except Exception as error:
        log.exception("%s failed", method.path)
        raise ServiceError(grpc.StatusCode.INTERNAL, f"{method.path}: {error!r}") from error
    return method.response_type() if response is None else response


def _grpc_handler(handlers: Mapping[str, object], method: Method) -> grpc.RpcMethodHandler:
    def behaviour(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return _invoke(handlers, method, request)
        except ServiceError as error:
            context.abort(error.code, error.message)

    request, response = method.request_type, method.response_type
    plus = _is_proto_plus(request), _is_proto_plus(response)
    read = request.deserialize if plus[0] else request.FromString  # type: ignore[attr-defined]
    write = response.serialize if plus[1] else response.SerializeToString  # type: ignore[attr-defined]
    return grpc.unary_unary_rpc_method_handler(behaviour, read, write)


def _json_error(error: ServiceError) -> tuple[int, str, bytes]:
    from google.api_core import exceptions

    status = exceptions.exception_class_for_grpc_status(error.code).code or 500
    payload = {"error": {"code": status, "message": error.message, "status": error.code.name}}
    return int(status), "application/json; charset=UTF-8", json.dumps(payload).encode()


class _Route(NamedTuple):
    verb: str
    pattern: re.Pattern[str]
    fields: tuple[str, ...]
    body: str | None
    method: Method


class _Listener(ThreadingHTTPServer):
    """The public port: gRPC connections are piped to ``grpc_address``; HTTP/1.1 is served."""

    grpc_address: tuple[str, int]
    handlers: Mapping[str, object]
    routes: list[_Route]
    admin: Admin | None

    connections: set[socket.socket]
    """Open client connections, closed by :meth:`Server.stop` (keep-alive ones too)."""

    def finish_request(self, request: Any, client_address: Any) -> None:
        self.connections.add(request)
        try:  # an OSError: the client went away, or the server stopped
            with contextlib.suppress(OSError):
                first = request.recv(len(_PREFACE), socket.MSG_PEEK | socket.MSG_WAITALL)
                if first == _PREFACE:
                    _pipe(request, self.grpc_address)
                elif first:
                    super().finish_request(request, client_address)
        finally:
            self.connections.discard(request)

    def answer(
        self, verb: str, path: str, query: Mapping[str, list[str]], body: bytes, content_type: str
    ) -> tuple[int, str, bytes]:
        """Transcode as Google's front end does: the rule's path variables, its body (the whole
        request, one field, or none) and the query parameters set the request's fields."""
        from google.protobuf import json_format

        if path.startswith("/local/") and self.admin:
            return self.admin(verb, path, query, body)
        matches = (
            (r, m) for r in self.routes if r.verb == verb and (m := r.pattern.fullmatch(path))
        )
        route, match = next(matches, (None, None))
        if route is None or match is None:
            raise ServiceError(
                grpc.StatusCode.NOT_FOUND, f"no Vertex AI v1 method answers {verb} {path}"
            )
        method = route.method
        pb_class = _pb_class(method.request_type)
        parsed: Any = None
        with contextlib.suppress(ValueError):
            parsed = json.loads(body) if body.strip() else {}
        fields = pb_class.DESCRIPTOR.fields
        raw = [f for f in fields if f.message_type and f.message_type.full_name == _HTTP_BODY]
        data: dict[str, Any] = {}
        if (
            raw
            and route.body == "*"
            and not (isinstance(parsed, dict) and raw[0].json_name in parsed)
        ):
            # The payload itself is the request's HttpBody (rawPredict from any HTTP client).
            data[raw[0].name] = {
                "contentType": content_type,
                "data": base64.b64encode(body).decode(),
            }
        elif route.body and body.strip():
            data = parsed if route.body == "*" else {route.body: parsed}
            if not isinstance(data, dict) or parsed is None:
                raise ServiceError(
                    grpc.StatusCode.INVALID_ARGUMENT, "Invalid JSON payload received."
                )
        for key, values in query.items():
            if key not in _SYSTEM_PARAMETERS:
                _put(data, key, _query_value(pb_class.DESCRIPTOR, key, values))
        for field, value in zip(route.fields, match.groups(), strict=True):
            _put(data, field, unquote(value))
        try:
            request = json_format.ParseDict(data, pb_class())
        except json_format.ParseError:
            from vertex_training.jobs.protos import refused_field

            # The field found by walking the request against its descriptor: protobuf's
            # error keeps it only in its text, which is not parsed.
            finding = refused_field(pb_class.DESCRIPTOR, data)
            said = str(finding) if finding else f"not a valid {pb_class.DESCRIPTOR.full_name}"
            raise ServiceError(grpc.StatusCode.INVALID_ARGUMENT, said) from None
        if _is_proto_plus(method.request_type):
            request = method.request_type.wrap(request)  # type: ignore[attr-defined]
        response = _invoke(self.handlers, method, request)
        if _pb_class(method.response_type).DESCRIPTOR.full_name == _HTTP_BODY:
            return 200, response.content_type or "application/octet-stream", response.data
        message = type(response).pb(response) if _is_proto_plus(type(response)) else response
        as_ints = "enum-encoding=int" in query.get("$alt", [""])[0]
        text = json_format.MessageToJson(message, use_integers_for_enums=as_ints)
        return 200, "application/json; charset=UTF-8", text.encode()


class _Rest(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes
    server: _Listener

    def _handle(self) -> None:
        url = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        query = parse_qs(url.query, keep_blank_values=True)
        try:
            answer = self.server.answer(
                self.command, url.path, query, body, self.headers.get("Content-Type", "")
            )
        except ServiceError as error:
            answer = _json_error(error)
        except Exception as error:
            log.exception("%s %s failed", self.command, self.path)
            answer = _json_error(ServiceError(grpc.StatusCode.INTERNAL, repr(error)))
        status, content_type, payload = answer
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)


def _pipe(client: socket.socket, address: tuple[str, int]) -> None:
    """Copy bytes both ways between ``client`` and ``address`` until both sides are done."""

    def copy(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
            target.shutdown(socket.SHUT_WR)

    with socket.create_connection(address) as upstream:
        back = threading.Thread(target=copy, args=(upstream, client), daemon=True)
        back.start()
        copy(client, upstream)
        back.join()


class Server:
    """A serving local Vertex AI wire; ``address`` is ``host:port``."""

    def __init__(self, listener: _Listener, grpc_server: grpc.Server, host: str) -> None:
        self._listener = listener
        self._grpc = grpc_server
        self.address = f"{host}:{listener.server_port}"
        serve = functools.partial(listener.serve_forever, poll_interval=0.05)  # a quick stop
        self._thread = threading.Thread(target=serve, name="vertex-wire", daemon=True)
        self._thread.start()

    def stop(self, grace: float | None = None) -> None:
        """Stop serving: gRPC calls get ``grace`` seconds, then every connection is closed."""
        self._grpc.stop(grace).wait()
        self._listener.shutdown()
        self._listener.server_close()
        for connection in list(self._listener.connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def serve(
    handlers: Mapping[str, object],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    admin: Admin | None = None,
) -> Server:
    """Serve every method of :data:`SERVICES` on ``host:port`` over gRPC and REST.

    ``handlers[service].<gapic_name>(request)`` answers a call with the response message
    (``None`` for an empty one) or raises :class:`ServiceError`; a method its handler lacks
    answers UNIMPLEMENTED, any other exception INTERNAL. Handlers may be called from several
    threads at once. ``admin`` answers every REST request under ``/local/``."""
    unknown = set(handlers) - set(SERVICES)
    if unknown:
        raise ValueError(f"no such service: {sorted(unknown)}; the services are {SERVICES}")
    table = methods()
    grpc_server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16), options=[("grpc.so_reuseport", 0)]
    )
    by_service: dict[str, dict[str, grpc.RpcMethodHandler]] = {}
    routes: list[_Route] = []
    for service in SERVICES:
        for method in table[service].values():
            full_service, rpc = method.path[1:].split("/")
            by_service.setdefault(full_service, {})[rpc] = _grpc_handler(handlers, method)
            for rule in method.http_rules:
                pattern, fields = _pattern(rule["uri"])
                routes.append(
                    _Route(rule["method"].upper(), pattern, fields, rule.get("body"), method)
                )
    for full_service, rpcs in by_service.items():
        grpc_server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(full_service, rpcs),)
        )
    grpc_port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    listener = _Listener((host, port), _Rest)
    listener.grpc_address = ("127.0.0.1", grpc_port)
    listener.handlers, listener.routes, listener.admin = handlers, routes, admin
    listener.connections = set()
    return Server(listener, grpc_server, host)
