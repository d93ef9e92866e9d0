"""The web console: an operator's view of a running hub, through the hub's own gRPC API.

Served by `memhub serve --console-port N` inside the hub process, or on its
own by `memhub console --hub HOST:PORT`. Every page is one or a few gRPC
calls made with the signed-in operator's token (memhub/client.py), so the
hub's policies decide and its audit log records everything the console
shows or does; the console never opens a database.

Pages are server-rendered HTML (Starlette, Jinja2 with autoescaping) with
no JavaScript at all: the Content-Security-Policy allows none. Sessions
live in memory on the server; a request belongs to one only with both its
random id, in an HttpOnly, SameSite=Strict cookie scoped to the session's
pages, and its random page key, the first segment of those pages' URLs
(memhub/console/binding.py: other ports of the host share its cookies, not its
URLs). The token never goes back to the browser.
"""
