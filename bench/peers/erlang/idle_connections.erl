%% idle_connections: the peer of bench/grove/idle_connections.cpp: N keep-alive connections to
%% Erlang/OTP's inets httpd (as http_hello.erl serves it), each idle after one request;
%% bytes_per_connection = growth of the BEAM's VmRSS / N. The clients cannot be bare sockets
%% inside the BEAM (a gen_tcp socket is a port with buffers of its own), so they are a Python
%% helper in its own OS process (idle_clients.py, beside this file), started as a port.
%% httpd's connection processes are still settling when the last answer has been read (each has
%% written its answer before it goes back to wait): the RSS is read once it stops growing.
-module(idle_connections).
-export([main/0]).

main() -> bench_peer:run("idle_connections", [{n, 10000}], fun run/1).

run(#{n := N}) ->
    Dir = filename:join("/tmp", "grove_idle_connections_" ++ os:getpid()),
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    ok = file:write_file(filename:join(Dir, "index.html"), <<"hello, world\n">>),
    ok = inets:start(),
    {ok, Httpd} = inets:start(httpd, [{port, 0}, {bind_address, {127, 0, 0, 1}}, {server_name, "idle_connections"},
                                      {server_root, Dir}, {document_root, Dir}, {directory_index, ["index.html"]},
                                      {modules, [mod_alias, mod_get]}, {keep_alive, true},
                                      {max_keep_alive_request, 100000000}, {keep_alive_timeout, 3600},
                                      {max_clients, 10000000}]),
    [{port, Port}] = httpd:info(Httpd, [port]),
    Source = proplists:get_value(source, ?MODULE:module_info(compile)),
    Helper = filename:join(filename:dirname(Source), "idle_clients.py"),
    Python = os:find_executable("python3"),
    Before = bench_peer:rss_bytes(),
    Clients = open_port({spawn_executable, Python},
                        [{args, [Helper, integer_to_list(Port), integer_to_list(N)]}, {line, 256}, exit_status, use_stdio]),
    receive
        {Clients, {data, {eol, "ready"}}} -> ok;
        {Clients, {exit_status, S}} -> bench_peer:fail("idle_connections", io_lib:format("the clients exited with ~p", [S]))
    after 600000 -> bench_peer:fail("idle_connections", "the clients were not ready in 600 s")
    end,
    After = settled_rss(bench_peer:rss_bytes(), 50),
    bench_peer:result("idle_connections", "bytes_per_connection", "B", (After - Before) / N, #{n => N}),
    port_close(Clients),
    ok.

%% The RSS once two readings 100 ms apart agree within 0.1% (at most Tries readings).
settled_rss(Last, 0) -> Last;
settled_rss(Last, Tries) ->
    timer:sleep(100),
    Now = bench_peer:rss_bytes(),
    case abs(Now - Last) =< Last div 1000 of
        true -> Now;
        false -> settled_rss(Now, Tries - 1)
    end.
