%% bench_peer: what every Erlang peer benchmark shares (see bench/README.md, "Output protocol").
%%
%% Each workload module exports main/0, started by bench/peers/erlang/launch as
%% `erl +S T:T +P P -noshell -s <workload> main -extra --n N ...`. main/0 calls run/3, which
%% parses the flags after -extra, runs the body in a fresh process (so no flag of the boot
%% process leaks in), and halts the emulator with status 0, or 1 when a check failed or the
%% body crashed. The body prints its metrics with result/5; a failed check calls fail/2.
-module(bench_peer).
-export([run/3, result/5, skip/2, fail/2, rss_bytes/0, cpu_seconds/0, now_ns/0, seconds_since/1]).

%% run(Workload, Defaults, Body): Defaults is [{Flag, Integer}] (Flag without "--");
%% Body gets the parsed map and must return ok.
run(Workload, Defaults, Body) ->
    %% --threads is consumed by the launcher (+S T:T); it is accepted here so it can be reported.
    Args = parse(init:get_plain_arguments(), maps:from_list([{threads, 2} | Defaults]), Workload),
    Parent = self(),
    {Pid, Ref} = spawn_monitor(fun() -> Parent ! {self(), done, Body(Args)} end),
    receive
        {Pid, done, ok} -> halt(0);
        {'DOWN', Ref, process, Pid, Reason} ->
            io:format(standard_error, "~s: failed: ~p~n", [Workload, Reason]),
            halt(1)
    end.

parse([], Acc, _W) -> Acc;
parse(["--" ++ Flag, Value | Rest], Acc, W) ->
    Key = list_to_atom(Flag),
    maps:is_key(Key, Acc) orelse usage(W, "unknown flag --" ++ Flag, Acc),
    Int = try list_to_integer(Value) catch error:badarg -> usage(W, "not an integer: " ++ Value, Acc) end,
    parse(Rest, Acc#{Key => Int}, W);
parse([Other | _], Acc, W) -> usage(W, "unexpected argument " ++ Other, Acc).

usage(W, Why, Defaults) ->
    Flags = [io_lib:format(" [--~s N (~p)]", [K, V]) || {K, V} <- lists:sort(maps:to_list(Defaults))],
    io:format(standard_error, "~s: ~s~nusage: ~s~s~n", [W, Why, W, Flags]),
    halt(2).

%% One protocol line: RESULT {"workload":..,"impl":"erlang","metric":..,"unit":..,"value":..,<Extra>}.
result(Workload, Metric, Unit, Value, Extra) ->
    Pairs = [{workload, Workload}, {impl, "erlang"}, {metric, Metric}, {unit, Unit}, {value, Value}]
            ++ lists:sort(maps:to_list(Extra)),
    io:format("RESULT {~s}~n", [lists:join(",", [[json(atom_to_list(K)), $:, json(V)] || {K, V} <- Pairs])]).

skip(Workload, Reason) ->
    io:format("SKIP {\"workload\":~s,\"impl\":\"erlang\",\"reason\":~s}~n", [json(Workload), json(Reason)]).

fail(Workload, Why) ->
    io:format(standard_error, "~s: check failed: ~s~n", [Workload, Why]),
    halt(1).

json(V) when is_integer(V) -> integer_to_list(V);
json(V) when is_float(V) -> float_to_list(V, [short]);
json(V) when is_atom(V) -> json(atom_to_list(V));
json(V) when is_list(V) -> [$", [esc(C) || C <- V], $"].
esc($") -> "\\\"";
esc($\\) -> "\\\\";
esc(C) when C < 32 -> io_lib:format("\\u~4.16.0b", [C]);
esc(C) -> C.

%% VmRSS of this OS process, in bytes, from /proc/self/status.
rss_bytes() ->
    {ok, Status} = file:read_file("/proc/self/status"),
    {match, [Kb]} = re:run(Status, "VmRSS:\\s+(\\d+) kB", [{capture, all_but_first, list}]),
    list_to_integer(Kb) * 1024.

%% utime + stime of this OS process (all threads), in seconds, from /proc/self/stat.
%% The kernel reports clock ticks of USER_HZ, which is 100 on Linux; resolution 10 ms.
cpu_seconds() ->
    {ok, Stat} = file:read_file("/proc/self/stat"),
    %% Field 2 (comm) is in parentheses and may hold spaces; count fields after the last ')'.
    [_, AfterComm] = string:split(binary_to_list(Stat), ")", trailing),
    Fields = string:lexemes(AfterComm, " "),
    %% AfterComm starts at field 3 (state); utime and stime are fields 14 and 15.
    (list_to_integer(lists:nth(12, Fields)) + list_to_integer(lists:nth(13, Fields))) / 100.

now_ns() -> erlang:monotonic_time(nanosecond).
seconds_since(T0) -> (now_ns() - T0) / 1.0e9.
