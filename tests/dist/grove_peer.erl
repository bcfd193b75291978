%% grove_peer: the Erlang side of grove::dist's tests (tests/dist/erlang_node.cpp compiles it with
%% erlc and starts it in `erl -name ... -setcookie ...`). A process registered as `peer` runs what the
%% Grove side asks, each scenario in a fresh process: {run, From, Ref, Function, Args} answers
%% From ! {Ref, Result} with Result = apply(grove_peer, Function, Args) (or {'EXIT', Reason}).
-module(grove_peer).
-behaviour(gen_server).
-export([start/0]).
-export([echo/0, spawn_echo/0, linker/2, trapper/1, watcher/2, watcher_by_name/3, exit2/2, link_to/1,
         send_many/2, receive_many/2, call/3, call_name/4, start_kv/1, kv_state/1, ping/1,
         alias_reply/2, make_alias/1, node_monitor/1, spawn_unlinker/2, sleeper/0, send_to/2, collector/0, collected/1, ping_forever/1, ping_at/3, links_of/1, make_funs/0, apply_funs/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

start() ->
    register(peer, spawn(fun loop/0)),
    ok.

loop() ->
    receive
        {run, From, Ref, F, Args} ->
            spawn(fun() -> From ! {Ref, catch apply(?MODULE, F, Args)} end);
        {echo, From, T} ->
            From ! T;
        halt ->
            erlang:halt()
    end,
    loop().

%% A process that sends back whatever {From, T} it gets, as {echoed, T}.
spawn_echo() -> spawn(fun echo/0).
echo() ->
    receive
        {From, T} when is_pid(From) -> From ! {echoed, T}, echo();
        stop -> ok
    end.

%% Links to Pid, tells Report, waits for go, then exits with Reason.
linker(Pid, Report) ->
    spawn(fun() ->
                  link(Pid),
                  Report ! {linked, self()},
                  receive {go, Reason} -> exit(Reason) end
          end).

%% Traps exits and reports each exit message and DOWN to Report; obeys {link, P}, {unlink, P},
%% {monitor, P}, {exit, P, R} (exit/2), {die, R}.
trapper(Report) ->
    spawn(fun() ->
                  process_flag(trap_exit, true),
                  Report ! {trapper, self()},
                  trapper_loop(Report)
          end).
trapper_loop(Report) ->
    receive
        {'EXIT', From, Reason} -> Report ! {got_exit, From, Reason};
        {'DOWN', Ref, process, Obj, Reason} -> Report ! {got_down, Ref, Obj, Reason};
        {link, P} -> Report ! {link_result, catch link(P)};
        {unlink, P} -> unlink(P), Report ! unlinked;
        {monitor, P} -> Report ! {monitor_ref, erlang:monitor(process, P)};
        {exit, P, R} -> exit(P, R), Report ! exit_sent;
        {die, R} -> exit(R);
        Other -> Report ! {unexpected, Other}
    end,
    trapper_loop(Report).

%% Monitors Pid (or {Name, Node}) and reports {down, Ref, Object, Reason}.
watcher(Target, Report) ->
    spawn(fun() ->
                  Ref = erlang:monitor(process, Target),
                  Report ! {watching, Ref},
                  receive {'DOWN', Ref, process, Obj, Reason} -> Report ! {down, Ref, Obj, Reason} end
          end).
watcher_by_name(Name, Node, Report) -> watcher({Name, Node}, Report).

%% exit/2 from a fresh process.
exit2(Pid, Reason) -> exit(Pid, Reason), ok.
link_to(Pid) -> spawn(fun() -> link(Pid), receive stop -> ok end end).

%% N messages {seq, I} to To, in order; then done.
send_many(To, N) -> [To ! {seq, I} || I <- lists:seq(1, N)], To ! done, ok.
%% Expects {seq, 1..N} in order from anyone, then reports to Report.
receive_many(N, Report) ->
    spawn(fun() ->
                  Report ! {receiver, self()},
                  Report ! {received, receive_seq(1, N)}
          end).
receive_seq(I, N) when I > N -> ok;
receive_seq(I, N) ->
    receive
        {seq, I} -> receive_seq(I + 1, N);
        {seq, I, _Payload} -> receive_seq(I + 1, N);
        {seq, J} -> {out_of_order, I, J}
    after 20000 -> {missing, I}
    end.

%% gen_server:call from Erlang, its result or its exit reason.
call(Server, Request, Timeout) ->
    try gen_server:call(Server, Request, Timeout) of
        R -> {ok, R}
    catch exit:Reason -> {exit, Reason}
    end.
call_name(Name, Node, Request, Timeout) -> call({Name, Node}, Request, Timeout).

%% A key-value gen_server: {get, K}, {put, K, V}, {sleep, Ms} (replies after Ms), {crash, Reason}.
start_kv(Name) ->
    {ok, Pid} = gen_server:start({local, Name}, ?MODULE, [], []),
    Pid.
kv_state(Name) -> sys:get_state(Name).
init([]) -> {ok, #{}}.
handle_call({get, K}, _From, S) -> {reply, maps:get(K, S, undefined), S};
handle_call({put, K, V}, _From, S) -> {reply, ok, S#{K => V}};
handle_call({sleep, Ms}, _From, S) -> timer:sleep(Ms), {reply, slept, S};
handle_call({crash, Reason}, _From, _S) -> exit(Reason);
handle_call({echo, T}, _From, S) -> {reply, T, S}.
handle_cast({put, K, V}, S) -> {noreply, S#{K => V}}.
handle_info(_, S) -> {noreply, S}.

ping(Node) -> net_adm:ping(Node).

%% An alias of a fresh process; what arrives at it is reported to Report. `off` deactivates it.
make_alias(Report) ->
    Self = self(),
    spawn(fun() ->
                  A = alias(),
                  Self ! {alias, A},
                  alias_loop(A, Report)
          end),
    receive {alias, A} -> A end.
alias_loop(A, Report) ->
    receive
        off -> unalias(A), alias_loop(A, Report);
        M -> Report ! {via_alias, M}, alias_loop(A, Report)
    end.
%% Sends Msg to a (Grove) alias reference.
alias_reply(Alias, Msg) -> Alias ! Msg, ok.

%% monitor_node: reports {nodedown, Node} to Report.
node_monitor(Report) -> spawn(fun() -> receive {watch, Node} -> monitor_node(Node, true), Report ! watching_node, receive M -> Report ! M end end end).

%% Links to Pid, then unlinks and links again N times, then reports whether it is linked.
spawn_unlinker(Pid, N) ->
    [begin link(Pid), unlink(Pid) end || _ <- lists:seq(1, N)],
    {links, Links} = process_info(self(), links),
    lists:member(Pid, Links).

%% Dest ! Msg, for a Dest of any form: a pid, {Name, Node}, an alias.
send_to(Dest, Msg) -> Dest ! Msg, ok.

%% A process that waits for ever (a target for kill and exit signals).
sleeper() -> spawn(fun() -> receive never -> ok end end).

%% A process that keeps every message it gets; collected/1 returns them, oldest first.
collector() -> spawn(fun() -> collect([]) end).
collect(Acc) ->
    receive
        {get, From} -> From ! {collected, lists:reverse(Acc)}, collect(Acc);
        M -> collect([M | Acc])
    end.
collected(C) ->
    C ! {get, self()},
    receive {collected, L} -> L after 5000 -> timeout end.

%% Pings Node every 200 ms for ever (a node whose cookie is wrong knocks at the door).
ping_forever(Node) -> spawn(fun() -> ping_loop(Node) end), ok.
ping_loop(Node) -> net_adm:ping(Node), timer:sleep(200), ping_loop(Node).

%% At wall-clock time At (ms since the epoch), pings Node and reports {pinged, Result} to Report.
ping_at(Node, At, Report) ->
    spawn(fun() ->
                  timer:sleep(max(0, At - os:system_time(millisecond))),
                  Report ! {pinged, net_adm:ping(Node)}
          end),
    ok.

%% The pids Pid is linked to.
links_of(Pid) -> {links, L} = process_info(Pid, links), L.

%% Funs to hand to the Grove side: an export fun and a closure (which holds a pid of this node).
make_funs() ->
    Y = 42,
    Self = self(),
    [fun erlang:abs/1, fun(X) -> X + Y end, fun() -> Self end].
%% Calls funs that made the trip through a Grove node.
apply_funs([Abs, Add, Who]) -> [Abs(-5), Add(-5), is_pid(Who())].
