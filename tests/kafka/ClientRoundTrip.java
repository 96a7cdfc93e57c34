// The Java client at its defaults against a cluster, once per case, all in one JVM: Admin
// creates the case's topic, a KafkaProducer (defaults: idempotent, acks=all; plus the case's
// settings, e.g. acks=0 or acks=1, which turn idempotence off unless it is set explicitly)
// writes COUNT records to partition 0, and a KafkaConsumer without a group reads
// them back with assign + seek. Count, order, keys and values checked.
//
//   java -cp 'KAFKA_LIBS/*' ClientRoundTrip.java BOOTSTRAP COUNT TOPIC[,key=value...] ...
//
// Output per case: "TOPIC: produced N", "TOPIC: consumed N", then its outcome line:
// "TOPIC: OK", "TOPIC: FAIL: why", or "TOPIC: IDEMPOTENCE-FAILED: why" when the producer
// failed for an idempotence reason (an error only idempotent produce meets: InitProducerId,
// sequence numbers, producer epochs), so that a test can tell that reason from every other.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClientRoundTrip {
    static final long WAIT_MS = 60_000;
    // errors only an idempotent (or transactional) producer can meet
    static final Set<String> IDEMPOTENCE_ERRORS = Set.of(
            "OutOfOrderSequenceException", "DuplicateSequenceException",
            "UnknownProducerIdException", "InvalidProducerEpochException",
            "ProducerFencedException", "InvalidPidMappingException",
            "ClusterAuthorizationException");

    static final class Failure extends Exception {
        Failure(String message) {
            super(message);
        }
    }

    public static void main(String[] args) {
        String bootstrap = args[0];
        int count = Integer.parseInt(args[1]);
        for (int i = 2; i < args.length; i++) {
            String[] words = args[i].split(",");
            Properties producerConfig = new Properties();
            for (int j = 1; j < words.length; j++) {
                String[] pair = words[j].split("=", 2);
                producerConfig.put(pair[0], pair[1]);
            }
            String outcome = roundTrip(bootstrap, words[0], count, producerConfig);
            System.out.println(words[0] + ": " + outcome);
        }
        System.exit(0);
    }

    /** "OK", "FAIL: why" or "IDEMPOTENCE-FAILED: why". */
    static String roundTrip(String bootstrap, String topic, int count, Properties producerConfig) {
        boolean idempotent = !"false".equals(producerConfig.getProperty(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true"));
        TopicPartition partition = new TopicPartition(topic, 0);
        try {
            createTopic(bootstrap, topic);
            try {
                produce(bootstrap, partition, count, producerConfig);
            } catch (Exception problem) {
                // send() itself throws once an idempotent producer is in a fatal state
                if (!(problem instanceof Failure) && idempotent && isIdempotenceError(problem)) {
                    return "IDEMPOTENCE-FAILED: " + describe(problem);
                }
                throw problem;
            }
            System.out.println(topic + ": produced " + count);
            consume(bootstrap, partition, count);
            System.out.println(topic + ": consumed " + count);
            return "OK";
        } catch (Failure failure) {
            return "FAIL: " + failure.getMessage();
        } catch (Exception problem) {
            problem.printStackTrace();
            return "FAIL: " + describe(problem);
        }
    }

    static void createTopic(String bootstrap, String topic) throws Exception {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(config)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3)))
                    .all().get(WAIT_MS, TimeUnit.MILLISECONDS);
        }
    }

    static void produce(String bootstrap, TopicPartition partition, int count,
                        Properties overrides)
            throws Failure, ExecutionException, InterruptedException,
                   java.util.concurrent.TimeoutException {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.putAll(overrides);
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        KafkaProducer<String, String> producer = new KafkaProducer<>(config);
        try {
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(
                        partition.topic(), partition.partition(), "key-" + i, "value-" + i)));
            }
            // no flush(): it waits up to delivery.timeout.ms (2 min); the gets are bounded
            long deadline = System.currentTimeMillis() + WAIT_MS;
            for (int i = 0; i < count; i++) {
                long left = Math.max(1, deadline - System.currentTimeMillis());
                long offset = sent.get(i).get(left, TimeUnit.MILLISECONDS).offset();
                // a fresh topic: record i lands at offset i, in send order; with acks=0 no
                // answer comes and the client reports offset -1
                long expected = "0".equals(overrides.getProperty(ProducerConfig.ACKS_CONFIG))
                        ? -1 : i;
                if (offset != expected) {
                    throw new Failure("record " + i + " was acknowledged at offset " + offset);
                }
            }
        } finally {
            producer.close(Duration.ofSeconds(5));
        }
    }

    static void consume(String bootstrap, TopicPartition partition, int count) throws Failure {
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class.getName());
        List<ConsumerRecord<String, String>> read = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.assign(List.of(partition));
            consumer.seek(partition, 0);
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (read.size() < count && System.currentTimeMillis() < deadline) {
                consumer.poll(Duration.ofMillis(500)).records(partition).forEach(read::add);
            }
            Map<TopicPartition, Long> end = consumer.endOffsets(List.of(partition));
            if (end.get(partition) != count) {
                throw new Failure("end offset " + end.get(partition) + ", expected " + count);
            }
        }
        if (read.size() != count) {
            throw new Failure("read " + read.size() + " of " + count + " records");
        }
        for (int i = 0; i < count; i++) {
            ConsumerRecord<String, String> record = read.get(i);
            if (record.offset() != i || !("key-" + i).equals(record.key())
                    || !("value-" + i).equals(record.value())) {
                throw new Failure("record " + i + " read as offset " + record.offset() + " "
                        + record.key() + "=" + record.value());
            }
        }
    }

    static boolean isIdempotenceError(Throwable problem) {
        for (Throwable cause = problem; cause != null; cause = cause.getCause()) {
            if (IDEMPOTENCE_ERRORS.contains(cause.getClass().getSimpleName())) {
                return true;
            }
            // the broker does not advertise InitProducerId (or too old a version of it)
            String message = String.valueOf(cause.getMessage());
            if (cause.getClass().getSimpleName().equals("UnsupportedVersionException")
                    && message.contains("INIT_PRODUCER_ID")) {
                return true;
            }
        }
        return false;
    }

    static String describe(Throwable problem) {
        StringBuilder why = new StringBuilder();
        for (Throwable cause = problem; cause != null; cause = cause.getCause()) {
            if (cause instanceof ExecutionException) {
                continue;
            }
            if (why.length() > 0) {
                why.append(" <- ");
            }
            why.append(cause.getClass().getName()).append(": ").append(cause.getMessage());
        }
        return why.toString();
    }
}
