// The Java consumer in a group (classic protocol, the default) against a cluster, one JVM:
//
//  1. Admin creates TOPIC (4 partitions, replication factor min(3, brokers)); a default
//     producer writes wave 1 (PER records to each partition).
//  2. Consumer A subscribes to TOPIC in GROUP (auto.offset.reset=earliest, no auto commit),
//     is given all 4 partitions, reads wave 1 and commits (commitSync).
//  3. Consumer B joins GROUP: a rebalance; A's listener sees its partitions revoked, then A
//     and B hold 2 disjoint partitions each. Wave 2 is written; A and B read it, each from
//     its own partitions, and commit; both close (LeaveGroup).
//  4. Wave 3 is written; consumer C joins GROUP and resumes from the committed offsets: it
//     reads exactly wave 3, none of waves 1-2; its committed() offsets are the waves' ends.
//
// Every record is checked (no duplicate, none missing, each from the partition its
// consumer holds). Output: progress lines "group: ...", then "group: OK" or "group: FAIL: why".
//
//   java -cp 'KAFKA_LIBS/*' JavaClientsGroup.java BOOTSTRAP TOPIC GROUP PER

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClientsGroup {
    static final long WAIT_MS = 60_000;
    static final int PARTITIONS = 4;

    static final class Failure extends Exception {
        Failure(String message) {
            super(message);
        }
    }

    /** A consumer of the group with what its rebalance listener saw. */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<TopicPartition> held = new HashSet<>();
        int revocations = 0;
        int assignments = 0;
        final List<ConsumerRecord<String, String>> read = new ArrayList<>();

        Member(String name, String bootstrap, String group, String topic) {
            this.name = name;
            Properties config = new Properties();
            config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            config.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                    StringDeserializer.class.getName());
            config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                    StringDeserializer.class.getName());
            consumer = new KafkaConsumer<>(config);
            consumer.subscribe(List.of(topic), this);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
                revocations++;
            }
            held.removeAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assignments++;
            held.addAll(partitions);
        }

        void poll() throws Failure {
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
                TopicPartition from = new TopicPartition(record.topic(), record.partition());
                if (!held.contains(from)) {
                    throw new Failure(name + " read " + from + " which it does not hold "
                            + held);
                }
                read.add(record);
            }
        }
    }

    public static void main(String[] args) {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int per = Integer.parseInt(args[3]);
        String outcome;
        try {
            run(bootstrap, topic, group, per);
            outcome = "OK";
        } catch (Failure failure) {
            outcome = "FAIL: " + failure.getMessage();
        } catch (Exception problem) {
            problem.printStackTrace();
            outcome = "FAIL: " + problem;
        }
        System.out.println("group: " + outcome);
        System.exit(0);
    }

    static void say(String line) {
        System.out.println("group: " + line);
        System.out.flush();
    }

    static void until(String what, BooleanSupplier done, Member... members) throws Failure {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                StringBuilder state = new StringBuilder();
                for (Member m : members) {
                    state.append(" ").append(m.name).append(" holds ").append(m.held)
                            .append(" read ").append(m.read.size());
                }
                throw new Failure("no " + what + " within " + WAIT_MS + " ms:" + state);
            }
            for (Member member : members) {
                member.poll();
            }
        }
    }

    static void run(String bootstrap, String topic, String group, int per) throws Exception {
        Properties adminConfig = new Properties();
        adminConfig.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(adminConfig)) {
            int brokers = admin.describeCluster().nodes().get(WAIT_MS, TimeUnit.MILLISECONDS)
                    .size();
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS,
                    (short) Math.min(3, brokers)))).all().get(WAIT_MS, TimeUnit.MILLISECONDS);
        }
        Properties producerConfig = new Properties();
        producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerConfig.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class.getName());
        producerConfig.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class.getName());
        Set<String> wave1 = new TreeSet<>();
        Set<String> wave2 = new TreeSet<>();
        Set<String> wave3 = new TreeSet<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
            write(producer, topic, "w1", per, wave1);

            Member a = new Member("A", bootstrap, group, topic);
            Member b = null;
            try {
                until("assignment of all partitions to A", () -> a.held.size() == PARTITIONS, a);
                until("wave 1 read by A", () -> a.read.size() >= wave1.size(), a);
                expect("A's records", keys(a.read), wave1);
                a.consumer.commitSync(Duration.ofMillis(WAIT_MS));
                say("A held " + PARTITIONS + " partitions, read and committed wave 1");

                int revocationsBefore = a.revocations;
                b = new Member("B", bootstrap, group, topic);
                Member bb = b;
                until("rebalance sharing the partitions between A and B",
                        () -> a.held.size() == PARTITIONS / 2 && bb.held.size() == PARTITIONS / 2,
                        a, bb);
                Set<TopicPartition> union = new HashSet<>(a.held);
                union.addAll(b.held);
                if (union.size() != PARTITIONS) {
                    throw new Failure("A holds " + a.held + " and B holds " + b.held);
                }
                if (a.revocations <= revocationsBefore) {
                    throw new Failure("A's listener saw no revocation when B joined");
                }
                say("rebalance: A and B hold " + PARTITIONS / 2 + " partitions each");

                int aBefore = a.read.size();
                write(producer, topic, "w2", per, wave2);
                until("wave 2 read by A and B",
                        () -> a.read.size() - aBefore + bb.read.size() >= wave2.size(), a, bb);
                Set<String> second = keys(a.read.subList(aBefore, a.read.size()));
                second.addAll(keys(b.read));
                expect("A's and B's records after the rebalance", second, wave2);
                if (a.read.size() - aBefore + b.read.size() != wave2.size()) {
                    throw new Failure("duplicates in wave 2");
                }
                a.consumer.commitSync(Duration.ofMillis(WAIT_MS));
                b.consumer.commitSync(Duration.ofMillis(WAIT_MS));
                say("A and B read and committed wave 2 from their own partitions");
            } finally {
                a.consumer.close(Duration.ofSeconds(10));
                if (b != null) {
                    b.consumer.close(Duration.ofSeconds(10));
                }
            }

            write(producer, topic, "w3", per, wave3);
            Member c = new Member("C", bootstrap, group, topic);
            try {
                until("wave 3 read by C", () -> c.read.size() >= wave3.size(), c);
                // anything of waves 1-2 arriving late would show as a duplicate or extra key
                for (int i = 0; i < 5; i++) {
                    c.poll();
                }
                expect("C's records (resumed from the committed offsets)", keys(c.read), wave3);
                if (c.read.size() != wave3.size()) {
                    throw new Failure("C read " + c.read.size() + " records, wave 3 has "
                            + wave3.size());
                }
                Set<TopicPartition> all = new HashSet<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    all.add(new TopicPartition(topic, p));
                }
                Map<TopicPartition, OffsetAndMetadata> committed =
                        c.consumer.committed(all, Duration.ofMillis(WAIT_MS));
                for (TopicPartition partition : all) {
                    OffsetAndMetadata offset = committed.get(partition);
                    if (offset == null || offset.offset() != 2L * per) {
                        throw new Failure("committed offset of " + partition + " is " + offset
                                + ", expected " + 2 * per);
                    }
                }
                say("C resumed from the committed offsets and read wave 3 only");
            } finally {
                c.consumer.close(Duration.ofSeconds(10));
            }
        }
    }

    static void write(KafkaProducer<String, String> producer, String topic, String wave, int per,
                      Set<String> keys)
            throws ExecutionException, InterruptedException,
                   java.util.concurrent.TimeoutException {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            for (int i = 0; i < per; i++) {
                String key = wave + "-" + p + "-" + i;
                keys.add(key);
                sent.add(producer.send(new ProducerRecord<>(topic, p, key, "v")));
            }
        }
        long deadline = System.currentTimeMillis() + WAIT_MS;
        for (Future<RecordMetadata> one : sent) {
            one.get(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
        }
    }

    static Set<String> keys(List<ConsumerRecord<String, String>> records) {
        Set<String> keys = new TreeSet<>();
        for (ConsumerRecord<String, String> record : records) {
            keys.add(record.key());
        }
        return keys;
    }

    static void expect(String what, Set<String> got, Set<String> wanted) throws Failure {
        if (!got.equals(wanted)) {
            Set<String> missing = new TreeSet<>(wanted);
            missing.removeAll(got);
            Set<String> extra = new TreeSet<>(got);
            extra.removeAll(wanted);
            throw new Failure(what + ": missing " + missing.size() + " " + first(missing)
                    + ", unexpected " + extra.size() + " " + first(extra));
        }
    }

    static String first(Set<String> keys) {
        return keys.stream().limit(5).toList().toString();
    }
}
