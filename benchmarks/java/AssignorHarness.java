// Apache Kafka's own assignors fed the specs our benchmarks and tests use, timed and printed.
//
// Built by scripts/ensure-java-assignors against kafka-clients and kafka-group-coordinator from
// Maven Central (a test peer, never a dependency of the product). Reads a script on stdin, one
// command a line, and writes results on stdout:
//
//   assignor NAME            range | roundrobin | sticky | cooperative-sticky (kafka-clients)
//                            server-uniform | server-range (kafka-group-coordinator)
//   timing WARMUP REPEAT     calls before the clock (JIT warm-up), then timed calls (median)
//   topic NAME COUNT         a topic and its partition count
//   member ID T1,T2,...      a member and its subscription ("-" for none); owns nothing yet
//   owned ID T:P,P;T:P       what the member owns now (replaces; "-" for nothing)
//   leave ID                 the member leaves
//   subscribe ID T1,T2,...   the member's subscription changes (it keeps what it owns)
//   mark / restore           save / bring back the members (subscriptions and owned)
//   reset                    forget every topic and member (the next case starts)
//   run LABEL [print]        assign; every member then owns its result (the next epoch)
//
// Each run prints "time LABEL MEDIAN_MS MIN_MS CALLS" and, with "print", one line per member
// "assigned LABEL ID T:P,P;T:P" (topics and partitions ascending), then "done LABEL".
// Only the assign call is timed: the inputs (for the server assignors the GroupSpec with its
// inverted target assignment, which Kafka's coordinator keeps up to date between epochs) are
// built before the clock starts, as Kafka's own assignor benchmarks do.

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public final class AssignorHarness {
    private static final class Member {
        List<String> topics;
        // topic -> partitions owned, ascending
        TreeMap<String, TreeSet<Integer>> owned = new TreeMap<>();

        Member(List<String> topics) {
            this.topics = topics;
        }

        Member copy() {
            Member m = new Member(topics);
            for (Map.Entry<String, TreeSet<Integer>> e : owned.entrySet()) {
                m.owned.put(e.getKey(), new TreeSet<>(e.getValue()));
            }
            return m;
        }
    }

    private final Map<String, Integer> topicCounts = new LinkedHashMap<>();
    private final Map<String, Uuid> topicIds = new HashMap<>();
    private final Map<Uuid, String> topicNames = new HashMap<>();
    private TreeMap<String, Member> members = new TreeMap<>();
    private TreeMap<String, Member> saved;
    private String assignor = "server-uniform";
    private int warmup = 3;
    private int repeat = 5;
    private int generation = 1;
    private final BufferedWriter out =
            new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 20);

    public static void main(String[] args) throws Exception {
        AssignorHarness harness = new AssignorHarness();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        String line;
        int number = 0;
        while ((line = in.readLine()) != null) {
            number++;
            line = line.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            try {
                harness.command(line.split(" "));
            } catch (RuntimeException e) {
                System.err.println("line " + number + ": " + e);
                System.exit(2);
            }
        }
        harness.out.flush();
    }

    private void command(String[] words) throws Exception {
        switch (words[0]) {
            case "assignor" -> assignor = words[1];
            case "timing" -> {
                warmup = Integer.parseInt(words[1]);
                repeat = Integer.parseInt(words[2]);
            }
            case "topic" -> {
                String name = words[1];
                topicCounts.put(name, Integer.parseInt(words[2]));
                if (!topicIds.containsKey(name)) {
                    Uuid id = new Uuid(0x5eed, topicIds.size() + 1);
                    topicIds.put(name, id);
                    topicNames.put(id, name);
                }
            }
            case "member" -> members.put(words[1], new Member(topicList(words[2])));
            case "owned" -> members.get(words[1]).owned = partitions(words[2]);
            case "leave" -> members.remove(words[1]);
            case "subscribe" -> members.get(words[1]).topics = topicList(words[2]);
            case "reset" -> {
                topicCounts.clear();
                members.clear();
            }
            case "mark" -> saved = copy(members);
            case "restore" -> members = copy(saved);
            case "run" -> run(words[1], words.length > 2 && words[2].equals("print"));
            default -> throw new IllegalArgumentException("unknown command " + words[0]);
        }
    }

    private static TreeMap<String, Member> copy(TreeMap<String, Member> from) {
        TreeMap<String, Member> to = new TreeMap<>();
        from.forEach((id, m) -> to.put(id, m.copy()));
        return to;
    }

    private static List<String> topicList(String word) {
        return word.equals("-") ? List.of() : Arrays.asList(word.split(","));
    }

    private static TreeMap<String, TreeSet<Integer>> partitions(String word) {
        TreeMap<String, TreeSet<Integer>> result = new TreeMap<>();
        if (word.equals("-")) {
            return result;
        }
        for (String part : word.split(";")) {
            int colon = part.indexOf(':');
            TreeSet<Integer> numbers = new TreeSet<>();
            for (String p : part.substring(colon + 1).split(",")) {
                numbers.add(Integer.parseInt(p));
            }
            result.put(part.substring(0, colon), numbers);
        }
        return result;
    }

    /** One assignor call on prepared inputs (timed), and its result in one shape (not timed). */
    private interface Call {
        /** Before each call, outside the clock. */
        default void prepare() {}

        Object assign();

        Map<String, TreeMap<String, TreeSet<Integer>>> convert(Object result);
    }

    private void run(String label, boolean print) throws Exception {
        Call call = assignor.startsWith("server-") ? serverCall() : clientCall();
        double[] times = new double[repeat];
        Object last = null;
        for (int i = 0; i < warmup; i++) {
            call.prepare();
            last = call.assign();
        }
        for (int i = 0; i < repeat; i++) {
            last = null;
            call.prepare();
            long start = System.nanoTime();
            last = call.assign();
            times[i] = (System.nanoTime() - start) / 1e6;
        }
        if (last == null) {
            call.prepare();
            last = call.assign();
        }
        Map<String, TreeMap<String, TreeSet<Integer>>> result = call.convert(last);
        double[] sorted = times.clone();
        Arrays.sort(sorted);
        double median = sorted.length == 0 ? 0 : sorted.length % 2 == 1
                ? sorted[sorted.length / 2]
                : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
        double min = sorted.length == 0 ? 0 : sorted[0];
        out.write(String.format("time %s %.3f %.3f %d%n", label, median, min, repeat));
        for (Map.Entry<String, Member> e : members.entrySet()) {
            TreeMap<String, TreeSet<Integer>> got = result.getOrDefault(e.getKey(), new TreeMap<>());
            e.getValue().owned = got;
            if (print) {
                out.write("assigned " + label + " " + e.getKey() + " " + format(got) + "\n");
            }
        }
        generation++;
        out.write("done " + label + "\n");
        out.flush();
    }

    private static String format(TreeMap<String, TreeSet<Integer>> assignment) {
        if (assignment.isEmpty()) {
            return "-";
        }
        StringBuilder text = new StringBuilder();
        for (Map.Entry<String, TreeSet<Integer>> e : assignment.entrySet()) {
            if (text.length() > 0) {
                text.append(';');
            }
            text.append(e.getKey()).append(':');
            boolean first = true;
            for (int p : e.getValue()) {
                if (!first) {
                    text.append(',');
                }
                text.append(p);
                first = false;
            }
        }
        return text.toString();
    }

    // -- kafka-group-coordinator: UniformAssignor, RangeAssignor -------------------------------

    private Call serverCall() {
        ConsumerGroupPartitionAssignor server = switch (assignor) {
            case "server-uniform" -> new UniformAssignor();
            case "server-range" -> new org.apache.kafka.coordinator.group.assignor.RangeAssignor();
            default -> throw new IllegalArgumentException("unknown assignor " + assignor);
        };
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<Uuid>> distinct = new HashSet<>();
        for (Map.Entry<String, Member> e : members.entrySet()) {
            Set<Uuid> subscribed = new HashSet<>();
            for (String topic : e.getValue().topics) {
                subscribed.add(topicIds.get(topic));
            }
            distinct.add(subscribed);
            Map<Uuid, Set<Integer>> owned = new HashMap<>();
            for (Map.Entry<String, TreeSet<Integer>> o : e.getValue().owned.entrySet()) {
                Uuid id = topicIds.get(o.getKey());
                owned.put(id, new HashSet<>(o.getValue()));
                Map<Integer, String> owners = inverted.computeIfAbsent(id, k -> new HashMap<>());
                for (int p : o.getValue()) {
                    owners.put(p, e.getKey());
                }
            }
            specs.put(e.getKey(), new MemberSubscriptionAndAssignmentImpl(
                    Optional.empty(), Optional.empty(), subscribed, new org.apache.kafka.coordinator.group.modern.Assignment(owned)));
        }
        SubscriptionType type =
                distinct.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        GroupSpecImpl spec = new GroupSpecImpl(specs, type, inverted);
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                String name = topicNames.get(topicId);
                return name == null ? -1 : topicCounts.getOrDefault(name, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        return new Call() {
            @Override
            public Object assign() {
                return server.assign(spec, describer);
            }

            @Override
            public Map<String, TreeMap<String, TreeSet<Integer>>> convert(Object raw) {
                return serverResult((GroupAssignment) raw);
            }
        };
    }

    private Map<String, TreeMap<String, TreeSet<Integer>>> serverResult(GroupAssignment assignment) {
        Map<String, TreeMap<String, TreeSet<Integer>>> result = new HashMap<>();
        {
            for (Map.Entry<String, MemberAssignment> e : assignment.members().entrySet()) {
                TreeMap<String, TreeSet<Integer>> byName = new TreeMap<>();
                for (Map.Entry<Uuid, Set<Integer>> p : e.getValue().partitions().entrySet()) {
                    if (!p.getValue().isEmpty()) {
                        byName.put(topicNames.get(p.getKey()), new TreeSet<>(p.getValue()));
                    }
                }
                result.put(e.getKey(), byName);
            }
        }
        return result;
    }

    // -- kafka-clients: RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeSticky ----

    private Call clientCall() {
        ConsumerPartitionAssignor client = switch (assignor) {
            case "range" -> new RangeAssignor();
            case "roundrobin" -> new RoundRobinAssignor();
            case "sticky" -> new StickyAssignor();
            case "cooperative-sticky" -> new CooperativeStickyAssignor();
            default -> throw new IllegalArgumentException("unknown assignor " + assignor);
        };
        Node node = new Node(0, "localhost", 9092);
        Node[] replicas = {node};
        List<PartitionInfo> infos = new ArrayList<>();
        topicCounts.forEach((topic, count) -> {
            for (int p = 0; p < count; p++) {
                infos.add(new PartitionInfo(topic, p, node, replicas, replicas));
            }
        });
        Cluster cluster = new Cluster("harness", List.of(node), infos, Set.of(), Set.of());
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (Map.Entry<String, Member> e : members.entrySet()) {
            List<TopicPartition> owned = new ArrayList<>();
            e.getValue().owned.forEach((t, ps) -> ps.forEach(p -> owned.add(new TopicPartition(t, p))));
            List<String> topics = e.getValue().topics;
            ByteBuffer userData = null;
            int memberGeneration = owned.isEmpty() ? -1 : generation;
            if (assignor.equals("sticky") && !owned.isEmpty()) {
                // eager sticky reads the previous assignment from user data only: let the
                // member's own assignor write it, as the Java consumer does
                StickyAssignor own = new StickyAssignor();
                own.onAssignment(new Assignment(owned),
                        new ConsumerGroupMetadata("harness", generation, e.getKey(), Optional.empty()));
                userData = own.subscriptionUserData(new HashSet<>(topics));
            }
            subscriptions.put(e.getKey(),
                    new Subscription(topics, userData, owned, memberGeneration, Optional.empty()));
        }
        GroupSubscription group = new GroupSubscription(subscriptions);
        return new Call() {
            @Override
            public void prepare() {
                // reading user data moves its buffer's position: each call reads it afresh
                for (Subscription s : subscriptions.values()) {
                    if (s.userData() != null) {
                        s.userData().rewind();
                    }
                }
            }

            @Override
            public Object assign() {
                return client.assign(cluster, group);
            }

            @Override
            public Map<String, TreeMap<String, TreeSet<Integer>>> convert(Object raw) {
                Map<String, TreeMap<String, TreeSet<Integer>>> result = new HashMap<>();
                ((ConsumerPartitionAssignor.GroupAssignment) raw).groupAssignment().forEach((id, a) -> {
                    TreeMap<String, TreeSet<Integer>> byName = new TreeMap<>();
                    for (TopicPartition tp : a.partitions()) {
                        byName.computeIfAbsent(tp.topic(), k -> new TreeSet<>()).add(tp.partition());
                    }
                    result.put(id, byName);
                });
                return result;
            }
        };
    }

}
