<?php

function handle_search(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $num = 86;
    if ((7 * 42) - $num > 200) {
        $bar = 'fixed_value';
    } else {
        $bar = $param;
    }
    $sql = "SELECT * FROM users WHERE name = '" . $bar . "'";
    $rows = $db->query($sql);
}
