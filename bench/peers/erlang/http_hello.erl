%% http_hello: Erlang/OTP's inets httpd serving "hello, world\n" as GET / (a static index.html,
%% keep-alive), the peer of bench/grove/http_hello.cpp; a server for bench/harness/load.py, started
%% by launch with --port P --threads T, running until killed.
%%
%% httpd writes a response's head and body with two sends, and with Nagle on the second waits for
%% the client's delayed ACK: ~44 ms per request (1,437 requests/s at 64 connections). OTP 25's httpd
%% refuses {socket_type, {ip_comm, [{nodelay, true}]}} (function_clause in http_transport:listen/4),
%% so this module is also the first httpd module of the chain: do/1 sets nodelay on the request's
%% socket, as the Grove, Go and h2o servers do on theirs, and passes the request on.
-module(http_hello).
-export([main/0, do/1]).

-include_lib("inets/include/httpd.hrl").

do(#mod{socket = Socket, data = Data}) ->
    _ = inet:setopts(Socket, [{nodelay, true}]),
    {proceed, Data}.

main() -> bench_peer:run("http_hello", [{port, 8080}], fun run/1).

run(#{port := Port}) ->
    Dir = filename:join("/tmp", "grove_http_hello_" ++ os:getpid()),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    ok = file:write_file(filename:join(Dir, "index.html"), <<"hello, world\n">>),
    ok = inets:start(),
    {ok, _} = inets:start(httpd, [{port, Port}, {bind_address, {127, 0, 0, 1}}, {server_name, "http_hello"},
                                  {server_root, Dir}, {document_root, Dir}, {directory_index, ["index.html"]},
                                  {modules, [?MODULE, mod_alias, mod_get]}, {keep_alive, true},
                                  {max_keep_alive_request, 100000000}, {keep_alive_timeout, 60},
                                  {max_clients, 100000}]),
    io:format("listening 127.0.0.1:~p~n", [Port]),
    receive after infinity -> ok end.
