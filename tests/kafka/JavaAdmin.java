// Every Admin call the issue lists, against each cluster given, through bootstrap.servers
// and then through bootstrap.controllers (KIP-919), all in one JVM. One line per call:
//
//   LABEL MODE CALL name OK summary
//   LABEL MODE CALL name FAIL ExceptionClass: message
//
// LABEL names the cluster, MODE is "servers" or "controllers". Summaries hold only what both Kafka and pykraft must
// agree on (counts, offsets, config values and sources, error classes; no ids, no times), so
// that a test can compare the lines of the two clusters as they are.
//
//   java -cp 'KAFKA_LIBS/*' JavaAdmin.java PREFIX [LABEL SERVERS CONTROLLERS]...
//
// Each mode first sets up, through bootstrap.servers and outside the calls under test, a
// topic PREFIX-MODE-data (2 partitions, replication factor min(3, brokers)) holding 10
// records in partition 0 with timestamps BASE+0..BASE+9 (BASE: a minute ago, so that no
// retention removes them; summaries show timestamps relative to BASE), and a consumer group
// PREFIX-MODE-group that committed offset 5 there. The calls then read and change those.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaAdmin {
    // a call Kafka refuses fails at once; one that hangs is cut here and reported
    static final int CALL_TIMEOUT_MS = 15_000;
    static final long SETUP_WAIT_MS = 60_000;
    static final int RECORDS = 10;

    interface Call {
        String run() throws Exception;
    }

    static String mode;
    static final long BASE = (System.currentTimeMillis() / 1000 - 60) * 1000;

    public static void main(String[] args) throws Exception {
        String prefix = args[0];
        for (int i = 1; i + 2 < args.length; i += 3) {
            String label = args[i];
            String servers = args[i + 1];
            String controllers = args[i + 2];
            for (String which : List.of("servers", "controllers")) {
                mode = label + " " + which;
                String names = prefix + "-" + which;
                int brokers = setUp(servers, names);
                Properties config = new Properties();
                config.put(which.equals("servers") ? AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG
                        : AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG,
                        which.equals("servers") ? servers : controllers);
                config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, CALL_TIMEOUT_MS);
                config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, CALL_TIMEOUT_MS);
                try (Admin admin = Admin.create(config); Admin setup = servers(servers)) {
                    calls(admin, setup, names, brokers);
                }
            }
        }
        System.exit(0);
    }

    static Admin servers(String servers) {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        return Admin.create(config);
    }

    static void call(String name, Call body) {
        String line;
        try {
            line = "OK " + body.run();
        } catch (Throwable problem) {
            Throwable cause = problem;
            while (cause instanceof ExecutionException && cause.getCause() != null) {
                cause = cause.getCause();
            }
            String message = String.valueOf(cause.getMessage()).replace('\n', ' ');
            line = "FAIL " + cause.getClass().getSimpleName() + ": " + message;
        }
        System.out.println(mode + " CALL " + name + " " + line);
        System.out.flush();
    }

    /** The data topic and the group of this mode; returns the broker count. */
    static int setUp(String servers, String names) throws Exception {
        String data = names + "-data";
        int brokers;
        try (Admin admin = servers(servers)) {
            brokers = admin.describeCluster().nodes().get(SETUP_WAIT_MS, TimeUnit.MILLISECONDS)
                    .size();
            admin.createTopics(List.of(new NewTopic(data, 2, (short) Math.min(3, brokers))))
                    .all().get(SETUP_WAIT_MS, TimeUnit.MILLISECONDS);
        }
        Properties producerConfig = new Properties();
        producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        producerConfig.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class.getName());
        producerConfig.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(data, 0, BASE + i, "k" + i, "v" + i))
                        .get(SETUP_WAIT_MS, TimeUnit.MILLISECONDS);
            }
        }
        Properties consumerConfig = new Properties();
        consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, names + "-group");
        consumerConfig.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class.getName());
        consumerConfig.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig)) {
            consumer.commitSync(Map.of(new TopicPartition(data, 0), new OffsetAndMetadata(5)),
                    Duration.ofMillis(SETUP_WAIT_MS));
        }
        return brokers;
    }

    static <T> T get(org.apache.kafka.common.KafkaFuture<T> future) throws Exception {
        return future.get(CALL_TIMEOUT_MS + 5_000, TimeUnit.MILLISECONDS);
    }

    static void calls(Admin admin, Admin setup, String names, int brokers) {
        String data = names + "-data";
        String made = names + "-made";
        TopicPartition first = new TopicPartition(data, 0);
        TopicPartition second = new TopicPartition(data, 1);
        String group = names + "-group";

        call("describeCluster", () -> {
            DescribeClusterResult result = admin.describeCluster();
            Collection<Node> nodes = get(result.nodes());
            Node controller = get(result.controller());
            boolean among = nodes.stream().anyMatch(n -> n.id() == controller.id());
            return "nodes=" + nodes.size() + " controller-among-nodes=" + among
                    + " cluster-id=" + (get(result.clusterId()) != null);
        });
        call("listTopics", () -> {
            Set<String> names_ = get(admin.listTopics().names());
            return "has-data-topic=" + names_.contains(data);
        });
        call("describeTopics", () -> {
            TopicDescription topic = get(admin.describeTopics(List.of(data)).allTopicNames())
                    .get(data);
            return "partitions=" + topic.partitions().size() + " replicas="
                    + topic.partitions().get(0).replicas().size() + " internal="
                    + topic.isInternal();
        });
        call("createTopics", () -> {
            get(admin.createTopics(List.of(new NewTopic(made, 1, (short) 1))).all());
            return "created";
        });
        call("createPartitions", () -> {
            get(admin.createPartitions(Map.of(made, NewPartitions.increaseTo(2))).all());
            return "partitions=" + get(setup.describeTopics(List.of(made)).allTopicNames())
                    .get(made).partitions().size();
        });
        call("deleteTopics", () -> {
            get(admin.deleteTopics(List.of(made)).all());
            return "deleted";
        });
        call("listOffsets", () -> {
            List<String> found = new ArrayList<>();
            Map<String, OffsetSpec> specs = new TreeMap<>(Map.of(
                    "earliest", OffsetSpec.earliest(), "latest", OffsetSpec.latest(),
                    "forTimestamp(BASE+5)", OffsetSpec.forTimestamp(BASE + 5),
                    "forTimestamp(BASE+60000)", OffsetSpec.forTimestamp(BASE + 60_000),
                    "maxTimestamp", OffsetSpec.maxTimestamp()));
            for (Map.Entry<String, OffsetSpec> spec : specs.entrySet()) {
                ListOffsetsResult.ListOffsetsResultInfo info = get(admin.listOffsets(
                        Map.of(first, spec.getValue())).partitionResult(first));
                long at = info.timestamp();
                found.add(spec.getKey() + "=" + info.offset() + "@"
                        + (at < 0 ? String.valueOf(at) : "BASE+" + (at - BASE)));
            }
            return String.join(" ", found);
        });
        call("deleteRecords", () -> {
            long low = get(admin.deleteRecords(Map.of(first, RecordsToDelete.beforeOffset(3)))
                    .lowWatermarks().get(first)).lowWatermark();
            return "low-watermark=" + low;
        });
        call("describeLogDirs", () -> {
            List<Integer> ids = get(admin.describeCluster().nodes()).stream().map(Node::id)
                    .collect(Collectors.toList());
            Map<Integer, Map<String, LogDirDescription>> dirs =
                    get(admin.describeLogDirs(ids).allDescriptions());
            int holding = 0;
            for (Map<String, LogDirDescription> node : dirs.values()) {
                for (LogDirDescription dir : node.values()) {
                    if (dir.replicaInfos().containsKey(first)) {
                        holding++;
                    }
                }
            }
            return "nodes=" + dirs.size() + " dirs-holding-partition-0=" + holding;
        });
        ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, data);
        call("describeConfigs", () -> {
            Config config = get(admin.describeConfigs(List.of(topicResource)).all())
                    .get(topicResource);
            List<String> shown = new ArrayList<>();
            for (String key : List.of("retention.ms", "cleanup.policy", "segment.bytes")) {
                ConfigEntry entry = config.get(key);
                shown.add(key + "=" + (entry == null ? "absent"
                        : entry.value() + "(" + entry.source() + ")"));
            }
            return String.join(" ", shown);
        });
        call("incrementalAlterConfigs", () -> {
            get(admin.incrementalAlterConfigs(Map.of(topicResource, List.of(new AlterConfigOp(
                    new ConfigEntry("retention.ms", "123456"), AlterConfigOp.OpType.SET))))
                    .all());
            // read back from the brokers, which learn the change from the metadata log
            long deadline = System.currentTimeMillis() + CALL_TIMEOUT_MS;
            while (true) {
                ConfigEntry entry = get(setup.describeConfigs(List.of(topicResource)).all())
                        .get(topicResource).get("retention.ms");
                if ("123456".equals(entry.value()) || System.currentTimeMillis() > deadline) {
                    return "retention.ms=" + entry.value() + "(" + entry.source() + ")";
                }
                Thread.sleep(100);
            }
        });
        call("electLeaders", () -> {
            Map<TopicPartition, Optional<Throwable>> results = get(admin.electLeaders(
                    ElectionType.PREFERRED, Set.of(first, second)).partitions());
            return new TreeMap<>(results.entrySet().stream().collect(Collectors.toMap(
                    e -> e.getKey().toString().substring(names.length()),
                    e -> e.getValue().map(t -> t.getClass().getSimpleName())
                            .orElse("elected")))).toString();
        });
        call("alterPartitionReassignments", () -> {
            // the same replicas in another order: a new preferred leader, no data to move
            List<Integer> replicas = new ArrayList<>(get(setup.describeTopics(List.of(data))
                    .allTopicNames()).get(data).partitions().get(1).replicas().stream()
                    .map(Node::id).collect(Collectors.toList()));
            java.util.Collections.reverse(replicas);
            get(admin.alterPartitionReassignments(Map.of(second,
                    Optional.of(new NewPartitionReassignment(replicas)))).all());
            // the brokers' metadata shows the new order once the controller committed it
            long deadline = System.currentTimeMillis() + CALL_TIMEOUT_MS;
            while (true) {
                List<Integer> now = get(setup.describeTopics(List.of(data)).allTopicNames())
                        .get(data).partitions().get(1).replicas().stream().map(Node::id)
                        .collect(Collectors.toList());
                if (now.equals(replicas) || System.currentTimeMillis() > deadline) {
                    return "replicas-in-the-new-order=" + now.equals(replicas);
                }
                Thread.sleep(100);
            }
        });
        call("listPartitionReassignments", () -> {
            Map<TopicPartition, PartitionReassignment> ongoing =
                    get(admin.listPartitionReassignments(Set.of(first, second)).reassignments());
            return "ongoing=" + ongoing.size();
        });
        call("describeMetadataQuorum", () -> {
            QuorumInfo quorum = get(admin.describeMetadataQuorum().quorumInfo());
            boolean leaderVotes = quorum.voters().stream()
                    .anyMatch(v -> v.replicaId() == quorum.leaderId());
            return "voters=" + quorum.voters().size() + " observers=" + quorum.observers().size()
                    + " leader-is-voter=" + leaderVotes;
        });
        call("listConsumerGroups", () -> {
            Collection<ConsumerGroupListing> groups = get(admin.listConsumerGroups().all());
            return "has-group=" + groups.stream().anyMatch(g -> g.groupId().equals(group));
        });
        call("describeConsumerGroups", () -> {
            ConsumerGroupDescription description =
                    get(admin.describeConsumerGroups(List.of(group)).all()).get(group);
            return "state=" + description.groupState() + " members="
                    + description.members().size() + " simple=" + description.isSimpleConsumerGroup();
        });
        call("listConsumerGroupOffsets", () -> {
            Map<TopicPartition, OffsetAndMetadata> offsets =
                    get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            TreeSet<String> shown = new TreeSet<>();
            offsets.forEach((tp, offset) -> shown.add(
                    tp.toString().substring(names.length()) + "=" + offset.offset()));
            return shown.toString();
        });
        call("deleteConsumerGroups", () -> {
            get(admin.deleteConsumerGroups(List.of(group)).all());
            return "deleted";
        });
    }
}
