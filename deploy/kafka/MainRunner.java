// Runs several of Kafka's command-line tools in one JVM, in turn, each as its bin/ script
// would run it (its main class, its arguments), so that N tool runs cost one JVM start.
//
//   java -cp 'LIBS/*' MainRunner.java < commands
//
// Each line of standard input is one command: the main class, then its arguments, separated
// by tabs. Kafka's tools end with Exit.exit(code) (org.apache.kafka.common.utils.internals
// since 4.4, common.utils before); the exit procedure is replaced by one that throws, so a
// tool's exit status is caught instead of ending the JVM. A tool's stdout and stderr are captured separately; for each command one
// line goes to the real stdout:
//
//   PYKRAFT-MAIN-RUNNER {"index":0,"exit":0,"stdout":"...","stderr":"..."}
//
// (deploy/kafka/mains.py parses it). A tool's status is that of its first Exit.exit, and its
// output ends there: a real process would have ended, though a tool that catches Throwable
// around its exit (TopicCommand does) goes on here. A tool that throws gets exit -1 and its
// stack trace in its stderr. Nothing else of a tool is changed.
//
// A command whose first word is "<PATH" gets that file as its standard input (as a shell's
// "< PATH" would give it: kafka-console-producer reads its records there); the rest of the
// line is the command. Without it a tool's standard input is empty.

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.kafka.common.utils.internals.Exit;

public class MainRunner {
    static final String MARKER = "PYKRAFT-MAIN-RUNNER ";

    // an Error, not an Exception: a tool's catch (Exception e) around its exit must not swallow it
    static final class ExitCalled extends Error {
        final int status;

        ExitCalled(int status) {
            super("Exit.exit(" + status + ") intercepted", null, false, false);
            this.status = status;
        }
    }

    // the run in progress: its captures, and its first Exit.exit status with what it had
    // printed by then (a tool's catch (Throwable) may catch ExitCalled and go on)
    static ByteArrayOutputStream out;
    static ByteArrayOutputStream err;
    static Integer exitStatus;
    static int outAtExit;
    static int errAtExit;

    static void exitCalled(int status) {
        if (exitStatus == null) {
            System.out.flush();
            System.err.flush();
            exitStatus = status;
            outAtExit = out.toString(StandardCharsets.UTF_8).length();
            errAtExit = err.toString(StandardCharsets.UTF_8).length();
        }
        throw new ExitCalled(status);
    }

    public static void main(String[] args) throws Exception {
        Exit.setExitProcedure((status, message) -> exitCalled(status));
        Exit.setHaltProcedure((status, message) -> exitCalled(status));
        List<String> lines = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.isEmpty()) {
                    lines.add(line);
                }
            }
        }
        // Log4j's console appender keeps the System.err it finds when it starts: start it
        // now, so that the tools' logs go to the real stderr, not into one tool's capture
        org.slf4j.LoggerFactory.getLogger(MainRunner.class).debug("starting");
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        for (int index = 0; index < lines.size(); index++) {
            String[] words = lines.get(index).split("\t", -1);
            InputStream toolIn = new ByteArrayInputStream(new byte[0]);
            if (words[0].startsWith("<")) {
                toolIn = new FileInputStream(words[0].substring(1));
                words = Arrays.copyOfRange(words, 1, words.length);
            }
            System.setIn(toolIn);
            out = new ByteArrayOutputStream();
            err = new ByteArrayOutputStream();
            exitStatus = null;
            PrintStream toolOut = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream toolErr = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(toolOut);
            System.setErr(toolErr);
            int status;
            try {
                status = run(words[0], Arrays.copyOfRange(words, 1, words.length), toolErr);
            } finally {
                toolOut.flush();
                toolErr.flush();
                System.setOut(realOut);
                System.setErr(realErr);
                System.setIn(realIn);
                toolIn.close();
            }
            String stdout = out.toString(StandardCharsets.UTF_8);
            String stderr = err.toString(StandardCharsets.UTF_8);
            if (exitStatus != null) {
                // the real process ends at its first exit: what it would have printed ends there
                status = exitStatus;
                stdout = stdout.substring(0, Math.min(stdout.length(), outAtExit));
                stderr = stderr.substring(0, Math.min(stderr.length(), errAtExit));
            }
            realOut.println(MARKER + "{\"index\":" + index + ",\"exit\":" + status
                    + ",\"stdout\":" + json(stdout) + ",\"stderr\":" + json(stderr) + "}");
            realOut.flush();
        }
        // tools may leave non-daemon threads (admin clients closed late): end here
        System.exit(0);
    }

    static int run(String mainClass, String[] args, PrintStream err) {
        try {
            Method main = Class.forName(mainClass).getMethod("main", String[].class);
            main.invoke(null, (Object) args);
            return 0;
        } catch (InvocationTargetException thrown) {
            Throwable cause = thrown.getCause();
            if (cause instanceof ExitCalled) {
                return ((ExitCalled) cause).status;
            }
            cause.printStackTrace(err);
            return -1;
        } catch (ReflectiveOperationException problem) {
            problem.printStackTrace(err);
            return -1;
        }
    }

    static String json(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                quoted.append('\\').append(c);
            } else if (c < 0x20) {
                quoted.append(String.format("\\u%04x", (int) c));
            } else {
                quoted.append(c);
            }
        }
        return quoted.append('"').toString();
    }
}
