package tfyarn.localyarn;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The NodeManagers' local file system (file:, as Hadoop's LocalFs), setting file modes with
 * java.nio. Hadoop sets them with libhadoop.so's chmod(2), which every real cluster's nodes
 * have; Maven publishes no libhadoop.so, so without this class Hadoop forks a `chmod` per file
 * and a node took about 110 s to localize a packed Python env of 20,000 files (tfyarn's
 * local cluster only: see tfyarn/localyarn/localfs.py).
 */
public final class NioLocalFs extends ChecksumFs {
  public NioLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new Raw(uri, conf));
  }

  /** Hadoop's RawLocalFs (whose constructors are package-private) over ModesByNio. */
  static final class Raw extends DelegateToFileSystem {
    Raw(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new ModesByNio(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1; // file: has no port
    }

    @Override
    public boolean isValidName(String src) {
      return true; // as RawLocalFs: any local path is valid
    }
  }

  /** A RawLocalFileSystem whose setPermission is one system call, not a process. */
  static final class ModesByNio extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {  // bit 8 (0400) down to bit 0 (0001)
      PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_EXECUTE,
    };

    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      if ((mode & ~0777) != 0) { // a sticky bit: java.nio cannot set it, chmod can
        super.setPermission(path, permission);
        return;
      }
      Set<PosixFilePermission> modes = EnumSet.noneOf(PosixFilePermission.class);
      for (int i = 0; i < BITS.length; i++) {
        if ((mode & (0400 >> i)) != 0) {
          modes.add(BITS[i]);
        }
      }
      Files.setPosixFilePermissions(pathToFile(path).toPath(), modes);
    }
  }
}
